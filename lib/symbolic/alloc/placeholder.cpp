// Replaced by the planner sources.
