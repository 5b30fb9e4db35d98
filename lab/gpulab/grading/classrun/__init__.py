"""`gpulab grade`: a class's notebooks graded, planned, run, reported and fed back."""
