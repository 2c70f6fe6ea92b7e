#!/usr/bin/env python3
"""Example family script: plans a photo backup and reports it. It only reads
~/Pictures (counting image files) and copies nothing, so it is harmless anywhere.

hearth gives the parameters as JSON on stdin (and as --name=value arguments)."""

import json
import os
import sys

IMAGE_ENDINGS = (".jpg", ".jpeg", ".png", ".heic", ".gif", ".webp")


def main() -> int:
    params = json.load(sys.stdin)
    album = str(params.get("album", "all"))
    destination = params.get("destination", "usb_drive")
    only_new = bool(params.get("only_new", True))

    pictures = os.path.join(os.path.expanduser("~"), "Pictures")
    folder = pictures if album == "all" else os.path.join(pictures, album)
    if album != "all" and (os.sep in album or album.startswith(".")):
        print(f"album {album!r} must be a folder name under ~/Pictures", file=sys.stderr)
        return 2

    count = 0
    if os.path.isdir(folder):
        for _root, _dirs, files in os.walk(folder):
            count += sum(1 for name in files if name.lower().endswith(IMAGE_ENDINGS))
    print(f"Photo backup plan: {count} photos in {folder} to the {destination}"
          f"{' (new ones only)' if only_new else ''}.")
    print("This example copies nothing.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
