#!/usr/bin/env bash
# Installs the tools the voice-note tests make real voice notes with: espeak-ng speaks a
# sentence into a WAV file, opusenc (opus-tools) encodes it as OGG/Opus, the format
# Telegram, Matrix clients and phones record voice notes in (see tests/support/voice.rs),
# and ffmpeg encodes the other formats members send (MP3, M4A, FLAC, OGG/Vorbis) for the
# tests of how long a file plays (src/voice/audio_duration_tests.rs).
#
# Idempotent: when `espeak-ng`, `opusenc` and `ffmpeg` are already on PATH it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

SCRIPT_NAME=install-test-audio
HAND_INSTALL_HINT="install espeak-ng, opus-tools and ffmpeg by hand"
source "$(dirname "$0")/apt-install.sh"

if command -v espeak-ng >/dev/null && command -v opusenc >/dev/null &&
    command -v ffmpeg >/dev/null; then
    exit 0
fi

apt_install " (ffmpeg brings its codecs: a minute or two)" espeak-ng opus-tools ffmpeg
espeak_version="$(version_of espeak-ng espeak-ng --version)"
opusenc_version="$(version_of opusenc opusenc --version)"
ffmpeg_version="$(version_of ffmpeg ffmpeg -version)"
say "installed $espeak_version, $opusenc_version and $ffmpeg_version"
