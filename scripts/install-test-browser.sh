#!/usr/bin/env bash
# Installs the real browser the web tests drive: Debian's headless-capable Chromium and its
# WebDriver server, chromedriver (packages chromium and chromium-driver), plus
# fonts-liberation so pages render with real fonts in screenshots. Tests start
# `chromedriver --port=<free loopback port>` and a headless Chromium through it
# (see tests/support/browser.rs).
#
# Idempotent: when `chromium` and `chromedriver` are already on PATH it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

SCRIPT_NAME=install-test-browser
HAND_INSTALL_HINT="install Chromium and chromedriver (same version) by hand"
source "$(dirname "$0")/apt-install.sh"

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi

apt_install " (a minute or two)" chromium chromium-driver fonts-liberation
chromium_version="$(version_of chromium chromium --version)"
driver_version="$(version_of chromedriver chromedriver --version)"
say "installed $chromium_version and $driver_version"
