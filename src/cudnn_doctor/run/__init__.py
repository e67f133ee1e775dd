"""What a failing program said and what its loader did, read for `run` and the Python hook."""
