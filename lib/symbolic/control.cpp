// Loops and branches of symbolic graphs (Level 3.5): being written.
