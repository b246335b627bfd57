"""Shared by the cache tests (CPU and GPU): run ``kfuse cache verify`` in-process."""
import argparse


def verify_cli(root):
    """``(exit status, printed text)`` of ``kfuse cache --cache-dir ROOT verify``."""
    from kfuse import cache_cli
    parser = argparse.ArgumentParser()
    cache_cli.add_subparser(parser.add_subparsers(dest="command"))
    out = []

    class _Out:
        def write(self, s):
            out.append(s)
    rc = cache_cli.run(parser.parse_args(["cache", "--cache-dir", root, "verify"]), out=_Out())
    return rc, "".join(out)
