"""Reports: the only part of cudnn-doctor that writes output."""
