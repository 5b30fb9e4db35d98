"""What a grading run decides (`verdict`) and the SQLite gradebook that keeps it."""
