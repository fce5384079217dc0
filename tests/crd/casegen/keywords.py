"""Case files about the schema keywords checked on custom resources."""

from .blocks import File, crd, obj_schema, root, x_preserve


# --- keyword validation of objects ---------------------------------------------------------------

def keywords_numeric():
    f = File("numeric", "Numeric keywords: minimum, maximum, exclusiveMinimum/Maximum, multipleOf, integer "
                        "versus number, int32/int64 formats.")
    spec = obj_schema({
        "min": {"type": "integer", "minimum": 1}, "max": {"type": "integer", "maximum": 10},
        "exmin": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "exmax": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
        "mult": {"type": "integer", "multipleOf": 5}, "multf": {"type": "number", "multipleOf": 0.5},
        "int": {"type": "integer"}, "num": {"type": "number"},
        "i32": {"type": "integer", "format": "int32"}, "i64": {"type": "integer", "format": "int64"},
        "both": {"type": "integer", "minimum": 2, "maximum": 4, "multipleOf": 2},
    })
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("minimum-ok", {"min": 1}), ("minimum-below", {"min": 0}), ("minimum-negative", {"min": -5}),
        ("maximum-ok", {"max": 10}), ("maximum-above", {"max": 11}),
        ("exclusive-minimum-equal", {"exmin": 0}), ("exclusive-minimum-above", {"exmin": 0.1}),
        ("exclusive-maximum-equal", {"exmax": 1}), ("exclusive-maximum-below", {"exmax": 0.99}),
        ("multiple-of-ok", {"mult": 15}), ("multiple-of-bad", {"mult": 7}),
        ("multiple-of-float-ok", {"multf": 2.5}), ("multiple-of-float-bad", {"multf": 2.25}),
        ("integer-given-float", {"int": 1.5}), ("integer-given-whole-float", {"int": 2.0}),
        ("integer-given-string", {"int": "1"}), ("number-given-integer", {"num": 3}),
        ("number-given-bool", {"num": True}), ("int32-overflow", {"i32": 3000000000}),
        ("int64-large", {"i64": 9007199254740993}), ("combined-all-bad", {"both": 5}),
        ("several-fields-bad", {"min": 0, "max": 20, "mult": 3}),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"n{i}", s)
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_string():
    f = File("string", "String keywords: minLength, maxLength, pattern, enum; type mismatches.")
    spec = obj_schema({
        "short": {"type": "string", "maxLength": 3}, "long": {"type": "string", "minLength": 2},
        "pat": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}, "color": {"type": "string", "enum": ["red", "green"]},
        "num": {"type": "integer", "enum": [1, 2, 3]}, "str": {"type": "string"}, "bool": {"type": "boolean"},
        "unicode": {"type": "string", "maxLength": 2},
    })
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("max-length-ok", {"short": "abc"}), ("max-length-over", {"short": "abcd"}),
        ("min-length-under", {"long": "a"}), ("min-length-empty", {"long": ""}),
        ("pattern-ok", {"pat": "abc-12"}), ("pattern-bad", {"pat": "ABC-12"}),
        ("enum-ok", {"color": "red"}), ("enum-bad", {"color": "blue"}), ("enum-case", {"color": "Red"}),
        ("enum-integer-bad", {"num": 4}), ("enum-integer-ok", {"num": 2}),
        ("string-given-number", {"str": 5}), ("string-given-object", {"str": {"a": 1}}),
        ("string-given-array", {"str": ["a"]}), ("bool-given-string", {"bool": "true"}),
        ("unicode-length-runes", {"unicode": "éé"}), ("unicode-length-over", {"unicode": "ééé"}),
        ("spec-given-string", "text"),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"s{i}", s)
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_format():
    f = File("format", "String formats checked on custom resources (date-time, date, byte, uuid, hostname, "
                       "ipv4, ipv6, cidr, mac, uri, email, duration, k8s-short-name, ...).")
    fmts = ["date-time", "date", "byte", "uuid", "hostname", "ipv4", "ipv6", "cidr", "mac", "uri", "email",
            "duration", "k8s-short-name", "k8s-long-name", "int32", "bogus"]
    spec = obj_schema({fm.replace("-", "_"): {"type": "string", "format": fm} for fm in fmts})
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("date-time", "2024-01-02T03:04:05Z", "2024-01-02 03:04"),
        ("date", "2024-01-02", "2024-13-40"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("hostname", "example.com", "-bad-.com"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "fe80:::1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
        ("mac", "01:23:45:67:89:ab", "01:23:45"),
        ("uri", "https://example.com/x", "not a uri"),
        ("email", "a@example.com", "a.example.com"),
        ("duration", "1h30m", "ninety"),
        ("k8s-short-name", "abc-1", "Abc"),
        ("k8s-long-name", "a.b-c", "a..b"),
        ("int32", "12", "x"),
        ("bogus", "anything", None),
    ]
    i = 0
    for fm, good, bad in cases:
        key = fm.replace("-", "_")
        f.post(f"{fm}-valid", f"f{i}", {key: good})
        i += 1
        if bad is not None:
            f.post(f"{fm}-invalid", f"f{i}", {key: bad})
            i += 1
    f.post("several-invalid", f"f{i}", {"ipv4": "x", "uuid": "y", "date": "z"})
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_array():
    f = File("array", "Array keywords: minItems, maxItems, item schemas, x-kubernetes-list-type set/map "
                      "uniqueness, list-map-keys.")
    spec = obj_schema({
        "few": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
        "many": {"type": "array", "minItems": 2, "items": {"type": "string"}},
        "ints": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "intset": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": obj_schema({"name": {"type": "string"}, "v": {"type": "integer"}}, required=["name"])},
        "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                 "items": obj_schema({"a": {"type": "string"}, "b": {"type": "integer", "default": 0}},
                                     required=["a"])},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
        "nested": {"type": "array", "items": {"type": "array", "items": {"type": "string", "maxLength": 1}}},
    })
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("max-items-ok", {"few": ["a", "b"]}), ("max-items-over", {"few": ["a", "b", "c"]}),
        ("min-items-under", {"many": ["a"]}), ("min-items-empty", {"many": []}),
        ("item-minimum-bad", {"ints": [1, -1, 2, -3]}), ("item-type-bad", {"ints": [1, "two"]}),
        ("set-unique-ok", {"set": ["a", "b"]}), ("set-duplicate", {"set": ["a", "b", "a"]}),
        ("int-set-duplicate", {"intset": [1, 1]}),
        ("map-ok", {"map": [{"name": "a", "v": 1}, {"name": "b", "v": 1}]}),
        ("map-duplicate-key", {"map": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
        ("map-missing-key", {"map": [{"v": 1}]}),
        ("map-two-keys-ok", {"map2": [{"a": "x", "b": 1}, {"a": "x", "b": 2}]}),
        ("map-two-keys-duplicate-by-default", {"map2": [{"a": "x"}, {"a": "x", "b": 0}]}),
        ("atomic-duplicates-allowed", {"atomic": ["a", "a"]}),
        ("nested-item-too-long", {"nested": [["a", "bb"], ["c"]]}),
        ("array-given-object", {"few": {"a": 1}}), ("array-given-string", {"set": "a"}),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"a{i}", s)
    g = f.group
    ap = lambda case, mgr, spec: f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="ap"),  # noqa: E731
                                        "query": {"fieldManager": mgr},
                                        "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "ap"},
                                                 "spec": spec}}, case)
    ap("apply-list-map-first-manager", "one", {"map": [{"name": "a", "v": 1}], "set": ["x"], "atomic": ["p"]})
    ap("apply-list-map-second-manager-merges", "two", {"map": [{"name": "b", "v": 2}], "set": ["y"]})
    ap("apply-atomic-list-conflict", "two", {"atomic": ["q"]})
    ap("apply-list-map-conflict", "two", {"map": [{"name": "a", "v": 5}]})
    ap("apply-list-map-first-manager-drops-item", "one", {"set": ["x"]})
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_object():
    f = File("object", "Object keywords: required, minProperties/maxProperties, additionalProperties (schema and "
                       "false), nullable, x-kubernetes-int-or-string, x-kubernetes-embedded-resource, "
                       "x-kubernetes-preserve-unknown-fields, type mismatches.")
    spec = obj_schema({
        "req": obj_schema({"a": {"type": "string"}, "b": {"type": "string"}}, required=["a", "b"]),
        "props": obj_schema(additionalProperties={"type": "string"}, minProperties=1, maxProperties=2),
        "typed": obj_schema(additionalProperties={"type": "integer", "minimum": 0}),
        "nullable": {"type": "string", "nullable": True},
        "notnull": {"type": "string"},
        "nullobj": obj_schema({"a": {"type": "string"}}, nullable=True),
        "ios": {"x-kubernetes-int-or-string": True},
        "iosp": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                 "pattern": "^[0-9]+%$", "minimum": 0},
        "emb": obj_schema(**{"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}),
        "free": obj_schema(**x_preserve()),
    }, required=["req"])
    f.create_crd(crd(f.group, schema=root(spec)))
    ok = {"req": {"a": "x", "b": "y"}}
    cases = [
        ("required-ok", ok), ("required-missing-one", {"req": {"a": "x"}}),
        ("required-missing-all", {"req": {}}), ("required-missing-parent", {}),
        ("spec-missing", None),
        ("min-properties-under", dict(ok, props={})), ("max-properties-over", dict(ok, props={"a": "1", "b": "2",
                                                                                              "c": "3"})),
        ("additional-properties-typed-ok", dict(ok, typed={"x": 1})),
        ("additional-properties-typed-bad", dict(ok, typed={"x": -1, "y": "s"})),
        ("nullable-null", dict(ok, nullable=None)), ("not-nullable-null", dict(ok, notnull=None)),
        ("nullable-object-null", dict(ok, nullobj=None)),
        ("int-or-string-int", dict(ok, ios=5)), ("int-or-string-string", dict(ok, ios="5%")),
        ("int-or-string-bool", dict(ok, ios=True)), ("int-or-string-anyof-bad", dict(ok, iosp="5")),
        ("int-or-string-anyof-negative", dict(ok, iosp=-1)), ("int-or-string-anyof-ok", dict(ok, iosp="50%")),
        ("embedded-ok", dict(ok, emb={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                      "data": {"k": "v"}})),
        ("embedded-missing-kind", dict(ok, emb={"apiVersion": "v1", "metadata": {"name": "x"}})),
        ("embedded-missing-apiversion", dict(ok, emb={"kind": "ConfigMap"})),
        ("embedded-empty", dict(ok, emb={})),
        ("embedded-bad-metadata-name", dict(ok, emb={"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "Bad_Name"}})),
        ("preserve-unknown-kept", dict(ok, free={"anything": {"deep": [1, "x", None]}})),
        ("object-given-array", dict(ok, req=["a"])), ("object-given-number", dict(ok, props=3)),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"o{i}", s)
    f.add({"method": "POST", "path": f.path(), "body": {"apiVersion": f"{f.group}/v1", "kind": "Widget",
                                                         "metadata": {"name": "o-bad-name_"}, "spec": ok}},
          "object-name-invalid")
    f.add({"method": "POST", "path": f.path(), "body": {"apiVersion": f"{f.group}/v1", "kind": "Widget",
                                                         "metadata": {"name": "o-labels", "labels": {"a b": "c"}},
                                                         "spec": ok}}, "object-label-invalid")
    f.delete_crd(f"widgets.{f.group}", wait=False)
