#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image. Nothing is downloaded:
# the zip carries the pipeline-builder binary (built for x86_64 Linux) and the scenarios.
set -euo pipefail
chmod +x /autograder/source/pipeline-builder /autograder/source/run_autograder
# A quick proof that the binary runs on this image and reads the scenarios.
/autograder/source/pipeline-builder scenarios validate /autograder/source/scenarios
