# Sourced by the faces that make release builds (.ci/c.sh, packaging.sh,
# python.sh, torture.sh, failover.sh): HOST is the host's target triple, for
# cargo's and maturin's --target. napi build (the Node face) always names it,
# and cargo keeps an explicitly named target's build apart from an unnamed
# one's: the faces share one release build of every dependency only if all
# name it.
# shellcheck shell=bash
HOST=$(rustc -vV | sed -n 's/^host: //p')
