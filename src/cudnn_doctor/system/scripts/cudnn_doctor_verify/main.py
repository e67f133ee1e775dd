"""The worker's entry: run one framework's backend with the CONFIG argument and print its report after the marker."""

import importlib
import json
import sys

from .common import MARKER, Unsupported

BACKENDS = ("torch", "tensorflow", "jax", "paddle", "onnxruntime")  # each a module <name>_backend with run(config)


def main(argv):
    config = json.loads(argv[1]) if len(argv) > 1 else {"framework": "torch"}
    name = config.get("framework", "torch")
    try:
        if name not in BACKENDS:
            report = {
                "framework": name,
                "status": "unsupported",
                "message": "verify has no benchmarks for %s yet" % name,
            }
        else:
            report = importlib.import_module("%s.%s_backend" % (__package__, name)).run(config)
    except Unsupported as reason:
        report = {"framework": name, "status": "unsupported", "message": str(reason)}
    except ImportError as error:
        report = {"framework": name, "status": "not-installed", "message": "%s: %s" % (type(error).__name__, error)}
    except Exception as error:  # the framework failed mid-run: report it, the doctor explains
        report = {"framework": name, "status": "error", "message": "%s: %s" % (type(error).__name__, str(error)[:500])}
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(report) + "\n")
    sys.stdout.flush()
