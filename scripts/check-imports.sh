#!/usr/bin/env bash
# A target's Package.swift dependencies are exactly the modules it imports, both ways:
# - every module a target imports is declared (a module reached only through another target's dependencies builds
#   today and breaks when that target drops it);
# - every target a target declares is imported by one of its files (a dependency nothing uses hides the real graph
#   and costs build order). A test target's dependency on an executable is excepted: it orders the build so that
#   the binary the tests run exists.
# Reads the manifest as SwiftPM resolves it (`swift package dump-package`) and each target's `import` lines; exits 1
# naming every undeclared import and every unused dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package dump-package | python3 -c '
import glob, json, re, sys
package = json.load(sys.stdin)
targets = {t["name"]: t for t in package["targets"]}
problems = []
pattern = re.compile(r"\s*(?:@testable\s+|@_implementationOnly\s+)?(?:internal\s+|package\s+|public\s+|private\s+|fileprivate\s+)?import\s+(\w+)")
for name, target in targets.items():
    folder = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + name
    declared = {d[k][0] for d in target.get("dependencies", []) for k in ("byName", "target", "product") if k in d}
    imported = set()
    for file in sorted(glob.glob(folder + "/**/*.swift", recursive=True)):
        for number, line in enumerate(open(file, encoding="utf-8"), 1):
            m = pattern.match(line)
            if not m or m.group(1) not in targets or m.group(1) == name:
                continue
            imported.add(m.group(1))
            if m.group(1) not in declared:
                problems.append(f"{file}:{number}: {name} imports {m.group(1)}, which its Package.swift entry does not declare")
    for dependency in sorted(declared - imported):
        if dependency not in targets:
            continue
        if target["type"] == "test" and targets[dependency]["type"] == "executable":
            continue
        if target["type"] == "plugin" or targets[dependency]["type"] == "plugin":
            continue
        problems.append(f"Package.swift: {name} declares {dependency}, which none of its files imports")
for line in problems:
    print(line)
print(f"check-imports: {len(targets)} targets, {len(problems)} problems", file=sys.stderr)
sys.exit(1 if problems else 0)
'
