#!/usr/bin/env bash
# Every module a target imports is declared in its Package.swift dependencies (a module reached only through another
# target's dependencies builds today and breaks when that target drops it). Reads the manifest as SwiftPM resolves it
# (`swift package dump-package`) and each target's `import` lines; exits 1 naming every undeclared import.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package dump-package | python3 -c '
import glob, json, os, re, sys
package = json.load(sys.stdin)
targets = {t["name"]: t for t in package["targets"]}
undeclared = []
for name, target in targets.items():
    folder = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + name
    declared = {d[k][0] for d in target.get("dependencies", []) for k in ("byName", "target", "product") if k in d}
    for file in sorted(glob.glob(folder + "/**/*.swift", recursive=True)):
        for number, line in enumerate(open(file, encoding="utf-8"), 1):
            m = re.match(r"\s*(?:@testable\s+|@_implementationOnly\s+)?(?:internal\s+|package\s+|public\s+|private\s+|fileprivate\s+)?import\s+(\w+)", line)
            if m and m.group(1) in targets and m.group(1) != name and m.group(1) not in declared:
                undeclared.append(f"{file}:{number}: {name} imports {m.group(1)}, which its Package.swift entry does not declare")
for line in undeclared:
    print(line)
print(f"check-imports: {len(targets)} targets, {len(undeclared)} undeclared imports", file=sys.stderr)
sys.exit(1 if undeclared else 0)
'
