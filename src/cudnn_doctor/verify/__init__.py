"""`verify`: the worker that times the frameworks, the verdicts on its figures, the history."""
