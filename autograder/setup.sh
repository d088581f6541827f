#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image. Nothing is downloaded:
# the zip carries the pipeline-builder binary (statically linked for x86_64 Linux, so it starts
# on any image) and the scenarios.
#
# AUTOGRADER_ROOT is where Gradescope lays the autograder out (/autograder); a local try of
# the zip sets it to a folder of its own.
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
source="$root/source"
chmod +x "$source/pipeline-builder" "$source/run_autograder"
# The scenario run_autograder grades must be one of the zip's: a typo would give every
# submission 0. Empty, the scenario each export names is graded, and nothing is checked here.
scenario=$(sed -n 's/^SCENARIO="\(.*\)"$/\1/p' "$source/run_autograder")
# A quick proof that the binary runs on this image and reads the scenarios.
if [ -n "$scenario" ]; then
  "$source/pipeline-builder" scenarios validate "$source/scenarios" --scenario "$scenario"
else
  "$source/pipeline-builder" scenarios validate "$source/scenarios"
fi
