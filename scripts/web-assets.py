#!/usr/bin/env python3
"""Writes what `lattice serve --http` serves as files: the OpenAPI document
(docs/openapi.json, and Sources/LatticeWeb/OpenAPIDocument.swift, served at
/openapi.json) and the console (console/*, embedded as Sources/LatticeWeb/ConsoleFiles.swift,
served at /console/). Run it after changing either; the tests check that what the node
serves is what is checked in."""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent

def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}

def obj(properties, required=()):
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema

value = {"description": "A JSON value; its meaning comes from type (STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP, BYTES, REFERENCE, LOCATION, ASSETID, and TYPE_LIST)."}
schemas = {
    "ZoneID": obj({"zoneName": {"type": "string"}, "ownerRecordName": {"type": "string"}, "ownerName": {"type": "string"}, "zoneType": {"type": "string"}}, ["zoneName"]),
    "Field": obj({"value": value, "type": {"type": "string"}}, ["value"]),
    "Record": obj({
        "recordName": {"type": "string"}, "recordType": {"type": "string"}, "recordChangeTag": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": ref("Field")}, "zoneID": ref("ZoneID"),
        "created": {"type": "object"}, "modified": {"type": "object"}, "deleted": {"type": "boolean"},
        "parent": {"type": "object"}, "share": {"type": "object"}, "pluginFields": {"type": "object"},
    }),
    "Filter": obj({"fieldName": {"type": "string"}, "comparator": {"type": "string"}, "fieldValue": ref("Field"), "distance": {"type": "number"}, "bounds": {"type": "object"}},
                  ["fieldName", "comparator", "fieldValue"]),
    "Sort": obj({"fieldName": {"type": "string"}, "ascending": {"type": "boolean"}, "relativeLocation": {"type": "object"}}, ["fieldName"]),
    "Error": {"type": "object", "properties": {"uuid": {"type": "string"}, "serverErrorCode": {"type": "string"}, "reason": {"type": "string"}},
              "required": ["uuid", "serverErrorCode", "reason"]},
    "RecordsResponse": {"type": "object", "properties": {"records": {"type": "array", "items": {"type": "object"}}}, "required": ["records"]},
    "ZonesResponse": {"type": "object", "properties": {"zones": {"type": "array", "items": {"type": "object"}}}, "required": ["zones"]},
}
desired = {"type": "array", "items": {"type": "string"}}
requests = {
    "records/query": obj({"query": obj({"recordType": {"type": "string"}, "filterBy": {"type": "array", "items": ref("Filter")}, "sortBy": {"type": "array", "items": ref("Sort")}}, ["recordType"]),
                          "zoneID": ref("ZoneID"), "resultsLimit": {"type": "integer", "minimum": 1}, "continuationMarker": {"type": "string"},
                          "desiredKeys": desired, "zoneWide": {"type": "boolean"}, "numbersAsStrings": {"type": "boolean"}}, ["query"]),
    "records/lookup": obj({"records": {"type": "array", "minItems": 1, "maxItems": 400, "items": obj({"recordName": {"type": "string"}, "zoneID": ref("ZoneID"), "desiredKeys": desired}, ["recordName"])},
                           "zoneID": ref("ZoneID"), "desiredKeys": desired, "numbersAsStrings": {"type": "boolean"}}, ["records"]),
    "records/modify": obj({"operations": {"type": "array", "minItems": 1, "maxItems": 400, "items": obj({
                               "operationType": {"type": "string", "enum": ["create", "update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"]},
                               "record": ref("Record"), "desiredKeys": desired}, ["operationType", "record"])},
                           "zoneID": ref("ZoneID"), "atomic": {"type": "boolean"}, "desiredKeys": desired, "numbersAsStrings": {"type": "boolean"}}, ["operations"]),
    "records/changes": obj({"zoneID": ref("ZoneID"), "syncToken": {"type": "string"}, "resultsLimit": {"type": "integer", "minimum": 1},
                            "desiredKeys": desired, "numbersAsStrings": {"type": "boolean"}, "reverse": {"type": "boolean"}}, ["zoneID"]),
    "changes/zone": obj({"zones": {"type": "array", "minItems": 1, "items": obj({"zoneID": ref("ZoneID"), "syncToken": {"type": "string"},
                         "resultsLimit": {"type": "integer", "minimum": 1}, "desiredKeys": desired, "numbersAsStrings": {"type": "boolean"}, "reverse": {"type": "boolean"}}, ["zoneID"])}}, ["zones"]),
    "changes/database": obj({"syncToken": {"type": "string"}, "resultsLimit": {"type": "integer", "minimum": 1}}),
    "zones/lookup": obj({"zones": {"type": "array", "minItems": 1, "items": ref("ZoneID")}}, ["zones"]),
    "zones/modify": obj({"operations": {"type": "array", "minItems": 1, "maxItems": 400, "items": obj({
                             "operationType": {"type": "string", "enum": ["create", "delete"]},
                             "zone": obj({"zoneID": ref("ZoneID"), "atomic": {"type": "boolean"}, "syncToken": {"type": "string"}}, ["zoneID"])}, ["operationType", "zone"])}}, ["operations"]),
}
summaries = {
    "records/query": "A page of records matching a query (filterBy, sortBy), and where the next page starts.",
    "records/lookup": "Records by name; one not found is its entry's NOT_FOUND.",
    "records/modify": "Creates, updates, replaces and deletes records; atomic per custom zone unless atomic is false.",
    "records/changes": "A zone's records changed and deleted since a sync token.",
    "changes/zone": "Several zones' changes since their tokens.",
    "changes/database": "The zones whose records changed since a database token.",
    "zones/lookup": "Zones by ID; one missing is its entry's ZONE_NOT_FOUND.",
    "zones/modify": "Creates and deletes zones.",
}
responses_for = {"records/query": "RecordsResponse", "records/lookup": "RecordsResponse", "records/modify": "RecordsResponse",
                 "zones/lookup": "ZonesResponse", "zones/modify": "ZonesResponse"}

def errors():
    return {code: {"$ref": "#/components/responses/Error"} for code in ("400", "401", "403", "404", "409", "413", "503")}

base = "/database/1/{container}/{environment}/{database}/"
path_parameters = {
    "container": {"name": "container", "in": "path", "required": True, "schema": {"type": "string"}, "description": "The node's container identifier."},
    "environment": {"name": "environment", "in": "path", "required": True, "schema": {"type": "string", "enum": ["development", "production"]}, "description": "Both name the node's one store."},
    "database": {"name": "database", "in": "path", "required": True, "schema": {"type": "string", "enum": ["private", "shared", "public"]}},
}
parameters = [{"$ref": f"#/components/parameters/{name}"} for name in path_parameters]
paths = {}
for operation, schema in requests.items():
    response = ref(responses_for[operation]) if operation in responses_for else {"type": "object"}
    paths[base + operation] = {"parameters": parameters, "post": {
        "operationId": operation.replace("/", "_"), "summary": summaries[operation],
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        "responses": {"200": {"description": "The result", "content": {"application/json": {"schema": response}}}, **errors()}}}
paths[base + "zones/changes"] = {"parameters": parameters, "post": {**paths[base + "changes/database"]["post"], "operationId": "zones_changes",
                                                                   "summary": "changes/database under its earlier name."}}
for operation, summary, schema in (("zones/list", "Every zone of the database with its current sync token.", "ZonesResponse"),
                                   ("users/caller", "The account the node's store belongs to, and the device.", None)):
    paths[base + operation] = {"parameters": parameters, "get": {
        "operationId": operation.replace("/", "_"), "summary": summary,
        "responses": {"200": {"description": "The result", "content": {"application/json": {"schema": ref(schema) if schema else {"type": "object"}}}}, **errors()}}}
paths[base + "events"] = {"parameters": parameters, "get": {
    "operationId": "events", "summary": "Server-sent events: record changes (event: record), sync events (event: sync), and after each round event: token with id: a database token to resume from (Last-Event-ID or since).",
    "parameters": [{"name": "zone", "in": "query", "schema": {"type": "string"}, "description": "Zone names, comma-separated (default: every zone)."},
                   {"name": "since", "in": "query", "schema": {"type": "string"}, "description": "A database change token to resume from."}],
    "responses": {"200": {"description": "The stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}, **errors()}}}
paths["/metrics"] = {"get": {"operationId": "metrics", "summary": "The node's metrics in Prometheus' text format.",
                             "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}, "401": errors()["401"]}}}

document = {
    "openapi": "3.0.3",
    "info": {"title": "Lattice node: CloudKit Web Services", "version": "1",
             "description": "What `lattice serve --http` answers: CloudKit Web Services' paths and dictionaries over one node's store, its events and its metrics. "
                            "Every request needs a token (`lattice http token create`) as ckAPIToken or a bearer header."},
    "servers": [{"url": "http://127.0.0.1:8080"}],
    "security": [{"bearer": []}, {"ckAPIToken": []}],
    "paths": paths,
    "components": {"schemas": schemas, "parameters": path_parameters,
                   "responses": {"Error": {"description": "CloudKit's error dictionary", "content": {"application/json": {"schema": ref("Error")}}}},
                   "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
                                                            "ckAPIToken": {"type": "apiKey", "in": "query", "name": "ckAPIToken"}}},
}
text = json.dumps(document, indent=2, sort_keys=True) + "\n"
(ROOT / "docs" / "openapi.json").write_text(text)
swift = ("// Written by scripts/openapi.py from the same source as docs/openapi.json; edit scripts/web-assets.py, not this file.\n\n"
         "/// The OpenAPI document of what the node serves, at `/openapi.json`.\n"
         "enum OpenAPIDocument {\n    static let json = #\"\"\"\n" + text + "\n\"\"\"#\n}\n")
(ROOT / "Sources" / "LatticeWeb" / "OpenAPIDocument.swift").write_text(swift)

types = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
files = sorted(path for path in (ROOT / "console").iterdir() if path.suffix in types)
cases = []
for path in files:
    content = path.read_text()
    assert '"""#' not in content, f"{path} holds the raw string's delimiter"
    name = "" if path.name == "index.html" else path.name
    cases.append(f'        case "{name}": return ("{types[path.suffix]}", #"""\n{content}\n"""#)')
swift = ("// Written by scripts/web-assets.py from console/; edit those files and run the script, not this file.\n\n"
         "/// The console's files, served at `/console/` (the node's binary carries them: nothing to install beside it).\n"
         "enum ConsoleFiles {\n"
         "    /// The file at `/console/NAME` (`index.html` at `/console/`), with its content type.\n"
         "    static func file(named name: String) -> (contentType: String, content: String)? {\n"
         "        switch name {\n" + "\n".join(cases) + "\n        default: return nil\n        }\n    }\n}\n")
(ROOT / "Sources" / "LatticeWeb" / "ConsoleFiles.swift").write_text(swift)
