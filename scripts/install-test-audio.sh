#!/usr/bin/env bash
# Installs the tools the voice-note tests make real voice notes with: espeak-ng speaks a
# sentence into a WAV file, opusenc (opus-tools) encodes it as OGG/Opus, the format
# Telegram, Matrix clients and phones record voice notes in (see tests/support/voice.rs).
#
# Idempotent: when `espeak-ng` and `opusenc` are already on PATH it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

SCRIPT_NAME=install-test-audio
HAND_INSTALL_HINT="install espeak-ng and opus-tools by hand"
source "$(dirname "$0")/apt-install.sh"

if command -v espeak-ng >/dev/null && command -v opusenc >/dev/null; then
    exit 0
fi

apt_install "" espeak-ng opus-tools
espeak_version="$(version_of espeak-ng espeak-ng --version)"
opusenc_version="$(version_of opusenc opusenc --version)"
say "installed $espeak_version and $opusenc_version"
