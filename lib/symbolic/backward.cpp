// Automatic differentiation of symbolic graphs (Level 3.5): being written.
