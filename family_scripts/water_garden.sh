#!/bin/sh
# Example family script: "turns on" the garden sprinkler. No sprinkler is connected:
# it checks its parameters and says what it would do, so it is harmless anywhere.
# hearth passes the parameters as --name=value arguments, one argument each (and as JSON
# on stdin).
minutes=""
zone="lawn"
for argument in "$@"; do
  case "$argument" in
    --minutes=*) minutes="${argument#--minutes=}" ;;
    --zone=*) zone="${argument#--zone=}" ;;
  esac
done
case "$minutes" in
  ''|*[!0-9]*) echo "minutes must be a whole number, got '$minutes'" >&2; exit 2 ;;
esac
if [ "$minutes" -lt 1 ] || [ "$minutes" -gt 60 ]; then
  echo "minutes must be between 1 and 60, got $minutes" >&2
  exit 2
fi
echo "Sprinkler on for $minutes minutes in the $zone zone (example: nothing is connected)."
