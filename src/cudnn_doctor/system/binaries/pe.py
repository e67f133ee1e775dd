"""PE files: import table (and delay imports), machine type, FileVersion resource, read with `struct`
(peheader.py), or with `pefile` (a heavy import, and slow per file: docs/speed.md) for any file that reader leaves to
it."""

from __future__ import annotations

from cudnn_doctor.binaries import PE_MACHINES, BinaryInfo


def read_pe(path: str) -> BinaryInfo:
    from cudnn_doctor.binaries import peheader

    try:
        with open(path, "rb") as handle:
            return peheader.read_pe_quickly(handle)
    except (peheader.Irregular, OSError):
        return read_pe_with_pefile(path)


def read_pe_with_pefile(path: str) -> BinaryInfo:
    import pefile

    try:
        pe = pefile.PE(path, fast_load=True)
    except pefile.PEFormatError as error:
        return BinaryInfo(None, error=f"not a valid PE file: {error.value}")
    except Exception as error:  # pefile's own struct.error, IndexError... on some damaged files: a finding, not a crash
        return BinaryInfo(None, error=f"not a valid PE file: pefile failed ({type(error).__name__})")
    try:
        return _info(pe)
    except Exception as error:
        return BinaryInfo(None, error=f"not a valid PE file: pefile failed ({type(error).__name__})")
    finally:
        pe.close()


def _info(pe) -> BinaryInfo:
    """Imports, delay imports, machine, version and string sections of a file pefile has opened."""
    import pefile

    pe.parse_data_directories(
        directories=[
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"],
        ]
    )
    imports = [entry.dll.decode("ascii", "replace") for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])]
    imports += [entry.dll.decode("ascii", "replace") for entry in getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", [])]
    strings = tuple(
        (s.PointerToRawData, s.SizeOfRawData) for s in pe.sections if s.Name.rstrip(b"\x00") in (b".rdata", b".data")
    )
    return BinaryInfo(
        "pe",
        PE_MACHINES.get(pe.FILE_HEADER.Machine, hex(pe.FILE_HEADER.Machine)),
        tuple(imports),
        version=_file_version(pe),
        string_ranges=strings,
    )


def _file_version(pe) -> str | None:
    """The FileVersion from the fixed version info (four 16-bit numbers), as Explorer shows it."""
    import pefile

    try:
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"]])
        if not hasattr(pe, "VS_FIXEDFILEINFO"):
            pe.parse_version_information(pe.DIRECTORY_ENTRY_RESOURCE) if hasattr(
                pe, "DIRECTORY_ENTRY_RESOURCE"
            ) else None
        fixed = getattr(pe, "VS_FIXEDFILEINFO", None)
        if not fixed:
            return None
        info = fixed[0]
        return (
            f"{info.FileVersionMS >> 16}.{info.FileVersionMS & 0xFFFF}.{info.FileVersionLS >> 16}"
            f".{info.FileVersionLS & 0xFFFF}"
        )
    except Exception:  # a malformed resource section must not hide the imports
        return None
