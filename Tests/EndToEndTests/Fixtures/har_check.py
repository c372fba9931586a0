#!/usr/bin/env python3
"""Validates a HAR file against the HAR 1.2 schema (jsonschema) and reads it back with a HAR reader from PyPI
(haralyzer). Prints one JSON object: the schema errors, and per entry what haralyzer read."""
import json, sys
import jsonschema
from haralyzer import HarParser

har_path, schema_path = sys.argv[1], sys.argv[2]
with open(har_path) as f:
    har = json.load(f)
with open(schema_path) as f:
    schema = json.load(f)
errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(har)]
parser = HarParser(har)
entries = []
for page in parser.pages:
    for entry in page.entries:
        entries.append({
            "url": entry.request.url,
            "method": entry.request.method,
            "status": entry.response.status,
            "setCookie": [h["value"] for h in entry.response.headers if h["name"].lower() == "set-cookie"],
            "original": [h["value"] for h in entry.raw_entry["response"].get("_originalHeaders", [])],
            "records": entry.raw_entry.get("_cookieProxy", {}).get("records", []),
            "requestCookies": [c["name"] for c in entry.request.cookies] if hasattr(entry.request, "cookies") else [],
        })
print(json.dumps({"errors": errors, "creator": parser.creator, "entries": entries}))
