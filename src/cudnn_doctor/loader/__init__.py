"""Emulation of the OS loaders over a System's files: where would `LoadLibrary` / `dlopen` look."""
