"""``pi-jupyter trust [--revoke] [FOLDER]``: the session folders whose objects load although someone else saved them."""

from __future__ import annotations

import argparse

from ..world import folder_trust, trust
from .common import CliError

DESCRIPTION = """\
The variables the agent's tools set are kept in the session folder's .pi-world store. Plain
data (numbers, text, arrays, frames) is stored in forms that cannot run code and always
loads. Anything that needs pickle (a function, a class, a model) loads only when your own key
signed it (the key is created on first use beside Jupyter's notebook secret, or wherever
$PI_JUPYTER_WORLD_KEY points). A folder someone else sent holds objects their key signed:
trusting the folder lets the objects it holds now load, which can run their code. Objects
added to the folder later are not covered. With no FOLDER, the trusted folders are listed;
--revoke stops trusting one. Nothing is written into the folder itself."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``trust``."""
    parser.add_argument("folder", metavar="FOLDER", nargs="*", help="a session folder (or its .pi-world, or one of its session files)")
    parser.add_argument("--revoke", action="store_true", help="stop trusting FOLDER")


def run(args: argparse.Namespace) -> int:
    """List, trust or stop trusting session folders."""
    try:
        if not args.folder:
            if args.revoke:
                raise CliError("trust --revoke: give the folder to stop trusting")
            print("\n".join(folder_trust.listing_lines()))
            return 0
        for folder in args.folder:
            print(folder_trust.revoke_folder(folder) if args.revoke else folder_trust.trust_folder(folder))
    except trust.TrustError as exc:
        raise CliError(str(exc)) from None
    return 0
