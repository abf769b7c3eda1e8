#!/usr/bin/env bash
# Runs setup, then every test of the project.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh
cargo test --workspace --all-targets
