"""Installing a cuDNN archive: read it safely, plan where each file goes, copy transactionally."""
