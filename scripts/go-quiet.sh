#!/usr/bin/env bash
# Runs the go command ($GO, else go) with the arguments given, passing its
# output through unchanged but for one block: the C compiler's deprecation
# warnings for github.com/NVIDIA/go-nvml/pkg/nvml. That package's cgo
# wrappers call every NVML function, the deprecated ones included, and
# NVML's header marks those deprecated, so each build or vet that compiles
# the package prints about a hundred lines of warnings a user can do
# nothing about. The go command prints a package's compiler output as one
# block headed "# <import path>"; the block of that package is dropped when
# every line of it is part of a -Wdeprecated-declarations warning (the
# warning, its "In function" and "note: declared here" lines, the source
# excerpt), and printed whole otherwise. Nothing else is filtered: Weft's
# own warnings, and any error, reach the terminal as the go command wrote
# them. The exit status is the go command's.
set -uo pipefail

{ "${GO:-go}" "$@" 2>&1 1>&3 3>&- | awk -v pkg=github.com/NVIDIA/go-nvml/pkg/nvml '
  function flush(   i) {
    if (quiet == 0)
      for (i = 1; i <= n; i++) print buf[i]
    n = 0; quiet = 1; held = 0
  }
  /^# / { if (held) flush() }
  /^# / && $2 == pkg { held = 1; quiet = 1; n = 0 }
  held {
    buf[++n] = $0
    if ($0 != "# " pkg &&
        $0 !~ /warning: .* is deprecated \[-Wdeprecated-declarations\]$/ &&
        $0 !~ /: In function / && $0 !~ /^In file included from / &&
        $0 !~ /: note: declared here$/ && $0 !~ /^ *[0-9]* \|/)
      quiet = 0
    next
  }
  { print; fflush() }
  END { if (held) flush() }
' >&2; } 3>&1
exit "${PIPESTATUS[0]}"
