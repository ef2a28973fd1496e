// Written by scripts/openapi.py from the same source as docs/openapi.json; edit scripts/web-assets.py, not this file.

/// The OpenAPI document of what the node serves, at `/openapi.json`.
enum OpenAPIDocument {
    static let json = #"""
{
  "components": {
    "parameters": {
      "container": {
        "description": "The node's container identifier.",
        "in": "path",
        "name": "container",
        "required": true,
        "schema": {
          "type": "string"
        }
      },
      "database": {
        "in": "path",
        "name": "database",
        "required": true,
        "schema": {
          "enum": [
            "private",
            "shared",
            "public"
          ],
          "type": "string"
        }
      },
      "environment": {
        "description": "Both name the node's one store.",
        "in": "path",
        "name": "environment",
        "required": true,
        "schema": {
          "enum": [
            "development",
            "production"
          ],
          "type": "string"
        }
      }
    },
    "responses": {
      "Error": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "CloudKit's error dictionary"
      }
    },
    "schemas": {
      "Error": {
        "properties": {
          "reason": {
            "type": "string"
          },
          "serverErrorCode": {
            "type": "string"
          },
          "uuid": {
            "type": "string"
          }
        },
        "required": [
          "uuid",
          "serverErrorCode",
          "reason"
        ],
        "type": "object"
      },
      "Field": {
        "additionalProperties": false,
        "properties": {
          "type": {
            "type": "string"
          },
          "value": {
            "description": "A JSON value; its meaning comes from type (STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP, BYTES, REFERENCE, LOCATION, ASSETID, and TYPE_LIST)."
          }
        },
        "required": [
          "value"
        ],
        "type": "object"
      },
      "Filter": {
        "additionalProperties": false,
        "properties": {
          "bounds": {
            "type": "object"
          },
          "comparator": {
            "type": "string"
          },
          "distance": {
            "type": "number"
          },
          "fieldName": {
            "type": "string"
          },
          "fieldValue": {
            "$ref": "#/components/schemas/Field"
          }
        },
        "required": [
          "fieldName",
          "comparator",
          "fieldValue"
        ],
        "type": "object"
      },
      "Record": {
        "additionalProperties": false,
        "properties": {
          "created": {
            "type": "object"
          },
          "deleted": {
            "type": "boolean"
          },
          "fields": {
            "additionalProperties": {
              "$ref": "#/components/schemas/Field"
            },
            "type": "object"
          },
          "modified": {
            "type": "object"
          },
          "parent": {
            "type": "object"
          },
          "pluginFields": {
            "type": "object"
          },
          "recordChangeTag": {
            "type": "string"
          },
          "recordName": {
            "type": "string"
          },
          "recordType": {
            "type": "string"
          },
          "share": {
            "type": "object"
          },
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          }
        },
        "type": "object"
      },
      "RecordsResponse": {
        "properties": {
          "records": {
            "items": {
              "type": "object"
            },
            "type": "array"
          }
        },
        "required": [
          "records"
        ],
        "type": "object"
      },
      "Sort": {
        "additionalProperties": false,
        "properties": {
          "ascending": {
            "type": "boolean"
          },
          "fieldName": {
            "type": "string"
          },
          "relativeLocation": {
            "type": "object"
          }
        },
        "required": [
          "fieldName"
        ],
        "type": "object"
      },
      "ZoneID": {
        "additionalProperties": false,
        "properties": {
          "ownerName": {
            "type": "string"
          },
          "ownerRecordName": {
            "type": "string"
          },
          "zoneName": {
            "type": "string"
          },
          "zoneType": {
            "type": "string"
          }
        },
        "required": [
          "zoneName"
        ],
        "type": "object"
      },
      "ZonesResponse": {
        "properties": {
          "zones": {
            "items": {
              "type": "object"
            },
            "type": "array"
          }
        },
        "required": [
          "zones"
        ],
        "type": "object"
      }
    },
    "securitySchemes": {
      "bearer": {
        "scheme": "bearer",
        "type": "http"
      },
      "ckAPIToken": {
        "in": "query",
        "name": "ckAPIToken",
        "type": "apiKey"
      }
    }
  },
  "info": {
    "description": "What `lattice serve --http` answers: CloudKit Web Services' paths and dictionaries over one node's store, its events and its metrics. Every request needs a token (`lattice http token create`) as ckAPIToken or a bearer header.",
    "title": "Lattice node: CloudKit Web Services",
    "version": "1"
  },
  "openapi": "3.0.3",
  "paths": {
    "/database/1/{container}/{environment}/{database}/changes/database": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "changes_database",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "resultsLimit": {
                    "minimum": 1,
                    "type": "integer"
                  },
                  "syncToken": {
                    "type": "string"
                  }
                },
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "The zones whose records changed since a database token."
      }
    },
    "/database/1/{container}/{environment}/{database}/changes/zone": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "changes_zone",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "zones": {
                    "items": {
                      "additionalProperties": false,
                      "properties": {
                        "desiredKeys": {
                          "items": {
                            "type": "string"
                          },
                          "type": "array"
                        },
                        "numbersAsStrings": {
                          "type": "boolean"
                        },
                        "resultsLimit": {
                          "minimum": 1,
                          "type": "integer"
                        },
                        "reverse": {
                          "type": "boolean"
                        },
                        "syncToken": {
                          "type": "string"
                        },
                        "zoneID": {
                          "$ref": "#/components/schemas/ZoneID"
                        }
                      },
                      "required": [
                        "zoneID"
                      ],
                      "type": "object"
                    },
                    "minItems": 1,
                    "type": "array"
                  }
                },
                "required": [
                  "zones"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Several zones' changes since their tokens."
      }
    },
    "/database/1/{container}/{environment}/{database}/events": {
      "get": {
        "operationId": "events",
        "parameters": [
          {
            "description": "Zone names, comma-separated (default: every zone).",
            "in": "query",
            "name": "zone",
            "schema": {
              "type": "string"
            }
          },
          {
            "description": "A database change token to resume from.",
            "in": "query",
            "name": "since",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "description": "The stream"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Server-sent events: record changes (event: record), sync events (event: sync), and after each round event: token with id: a database token to resume from (Last-Event-ID or since)."
      },
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ]
    },
    "/database/1/{container}/{environment}/{database}/records/changes": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "records_changes",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "desiredKeys": {
                    "items": {
                      "type": "string"
                    },
                    "type": "array"
                  },
                  "numbersAsStrings": {
                    "type": "boolean"
                  },
                  "resultsLimit": {
                    "minimum": 1,
                    "type": "integer"
                  },
                  "reverse": {
                    "type": "boolean"
                  },
                  "syncToken": {
                    "type": "string"
                  },
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneID"
                  }
                },
                "required": [
                  "zoneID"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "A zone's records changed and deleted since a sync token."
      }
    },
    "/database/1/{container}/{environment}/{database}/records/lookup": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "records_lookup",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "desiredKeys": {
                    "items": {
                      "type": "string"
                    },
                    "type": "array"
                  },
                  "numbersAsStrings": {
                    "type": "boolean"
                  },
                  "records": {
                    "items": {
                      "additionalProperties": false,
                      "properties": {
                        "desiredKeys": {
                          "items": {
                            "type": "string"
                          },
                          "type": "array"
                        },
                        "recordName": {
                          "type": "string"
                        },
                        "zoneID": {
                          "$ref": "#/components/schemas/ZoneID"
                        }
                      },
                      "required": [
                        "recordName"
                      ],
                      "type": "object"
                    },
                    "maxItems": 400,
                    "minItems": 1,
                    "type": "array"
                  },
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneID"
                  }
                },
                "required": [
                  "records"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/RecordsResponse"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Records by name; one not found is its entry's NOT_FOUND."
      }
    },
    "/database/1/{container}/{environment}/{database}/records/modify": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "records_modify",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "atomic": {
                    "type": "boolean"
                  },
                  "desiredKeys": {
                    "items": {
                      "type": "string"
                    },
                    "type": "array"
                  },
                  "numbersAsStrings": {
                    "type": "boolean"
                  },
                  "operations": {
                    "items": {
                      "additionalProperties": false,
                      "properties": {
                        "desiredKeys": {
                          "items": {
                            "type": "string"
                          },
                          "type": "array"
                        },
                        "operationType": {
                          "enum": [
                            "create",
                            "update",
                            "forceUpdate",
                            "replace",
                            "forceReplace",
                            "delete",
                            "forceDelete"
                          ],
                          "type": "string"
                        },
                        "record": {
                          "$ref": "#/components/schemas/Record"
                        }
                      },
                      "required": [
                        "operationType",
                        "record"
                      ],
                      "type": "object"
                    },
                    "maxItems": 400,
                    "minItems": 1,
                    "type": "array"
                  },
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneID"
                  }
                },
                "required": [
                  "operations"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/RecordsResponse"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Creates, updates, replaces and deletes records; atomic per custom zone unless atomic is false."
      }
    },
    "/database/1/{container}/{environment}/{database}/records/query": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "records_query",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "continuationMarker": {
                    "type": "string"
                  },
                  "desiredKeys": {
                    "items": {
                      "type": "string"
                    },
                    "type": "array"
                  },
                  "numbersAsStrings": {
                    "type": "boolean"
                  },
                  "query": {
                    "additionalProperties": false,
                    "properties": {
                      "filterBy": {
                        "items": {
                          "$ref": "#/components/schemas/Filter"
                        },
                        "type": "array"
                      },
                      "recordType": {
                        "type": "string"
                      },
                      "sortBy": {
                        "items": {
                          "$ref": "#/components/schemas/Sort"
                        },
                        "type": "array"
                      }
                    },
                    "required": [
                      "recordType"
                    ],
                    "type": "object"
                  },
                  "resultsLimit": {
                    "minimum": 1,
                    "type": "integer"
                  },
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneID"
                  },
                  "zoneWide": {
                    "type": "boolean"
                  }
                },
                "required": [
                  "query"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/RecordsResponse"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "A page of records matching a query (filterBy, sortBy), and where the next page starts."
      }
    },
    "/database/1/{container}/{environment}/{database}/users/caller": {
      "get": {
        "operationId": "users_caller",
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "The account the node's store belongs to, and the device."
      },
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ]
    },
    "/database/1/{container}/{environment}/{database}/zones/changes": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "zones_changes",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "resultsLimit": {
                    "minimum": 1,
                    "type": "integer"
                  },
                  "syncToken": {
                    "type": "string"
                  }
                },
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "changes/database under its earlier name."
      }
    },
    "/database/1/{container}/{environment}/{database}/zones/list": {
      "get": {
        "operationId": "zones_list",
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ZonesResponse"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Every zone of the database with its current sync token."
      },
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ]
    },
    "/database/1/{container}/{environment}/{database}/zones/lookup": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "zones_lookup",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "zones": {
                    "items": {
                      "$ref": "#/components/schemas/ZoneID"
                    },
                    "minItems": 1,
                    "type": "array"
                  }
                },
                "required": [
                  "zones"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ZonesResponse"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Zones by ID; one missing is its entry's ZONE_NOT_FOUND."
      }
    },
    "/database/1/{container}/{environment}/{database}/zones/modify": {
      "parameters": [
        {
          "$ref": "#/components/parameters/container"
        },
        {
          "$ref": "#/components/parameters/environment"
        },
        {
          "$ref": "#/components/parameters/database"
        }
      ],
      "post": {
        "operationId": "zones_modify",
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "additionalProperties": false,
                "properties": {
                  "operations": {
                    "items": {
                      "additionalProperties": false,
                      "properties": {
                        "operationType": {
                          "enum": [
                            "create",
                            "delete"
                          ],
                          "type": "string"
                        },
                        "zone": {
                          "additionalProperties": false,
                          "properties": {
                            "atomic": {
                              "type": "boolean"
                            },
                            "syncToken": {
                              "type": "string"
                            },
                            "zoneID": {
                              "$ref": "#/components/schemas/ZoneID"
                            }
                          },
                          "required": [
                            "zoneID"
                          ],
                          "type": "object"
                        }
                      },
                      "required": [
                        "operationType",
                        "zone"
                      ],
                      "type": "object"
                    },
                    "maxItems": 400,
                    "minItems": 1,
                    "type": "array"
                  }
                },
                "required": [
                  "operations"
                ],
                "type": "object"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ZonesResponse"
                }
              }
            },
            "description": "The result"
          },
          "400": {
            "$ref": "#/components/responses/Error"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          },
          "403": {
            "$ref": "#/components/responses/Error"
          },
          "404": {
            "$ref": "#/components/responses/Error"
          },
          "409": {
            "$ref": "#/components/responses/Error"
          },
          "413": {
            "$ref": "#/components/responses/Error"
          },
          "503": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "Creates and deletes zones."
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "responses": {
          "200": {
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "description": "Metrics"
          },
          "401": {
            "$ref": "#/components/responses/Error"
          }
        },
        "summary": "The node's metrics in Prometheus' text format."
      }
    }
  },
  "security": [
    {
      "bearer": []
    },
    {
      "ckAPIToken": []
    }
  ],
  "servers": [
    {
      "url": "http://127.0.0.1:8080"
    }
  ]
}

"""#
}
