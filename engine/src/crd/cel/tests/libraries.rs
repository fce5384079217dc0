//! Tests of the CEL libraries rules can use: strings, lists, semver, regex, URL, IP and CIDR,
//! quantity, formats, sets; value typing (formats, int-or-string, maps, nested objects); and
//! runtime errors that must not panic.

use super::*;

#[test]
fn string_functions() {
    let s = strings();
    for rule in [
        "self.lowerAscii() == 'hello, world'",
        "self.upperAscii() == 'HELLO, WORLD'",
        "' x '.trim() == 'x'",
        "self.replace('World', 'CEL') == 'Hello, CEL'",
        "self.split(', ') == ['Hello', 'World']",
        "['a', 'b'].join('-') == 'a-b'",
        "self.indexOf('o') == 4 && self.lastIndexOf('o') == 8",
        "self.substring(7) == 'World' && self.substring(0, 5) == 'Hello'",
        "self.charAt(1) == 'e'",
        "self.startsWith('Hello') && self.endsWith('World') && self.contains(', ')",
        "self.matches('^[A-Z][a-z]+, [A-Z][a-z]+$')",
    ] {
        assert!(eval(s.clone(), rule, json!("Hello, World")), "{rule}");
    }
}

#[test]
fn list_library() {
    let ints = json!({"type": "array", "maxItems": 10, "items": {"type": "integer"}});
    for rule in [
        "self.isSorted()",
        "self.sum() == 10",
        "self.min() == 1 && self.max() == 4",
        "self.indexOf(3) == 2 && self.lastIndexOf(9) == -1",
        "[1, 2, 1].lastIndexOf(1) == 2",
        "!['b', 'a'].isSorted()",
    ] {
        assert!(eval(ints.clone(), rule, json!([1, 2, 3, 4])), "{rule}");
    }
}

#[test]
fn lists_extension() {
    let ints = json!({"type": "array", "maxItems": 10, "items": {"type": "integer"}});
    for rule in [
        "self.slice(1, 3) == [1, 1]",
        "self.distinct() == [3, 1, 2]",
        "self.sort() == [1, 1, 2, 3]",
        "self.reverse() == [2, 1, 1, 3]",
        "[[1], [2, 3]].flatten() == [1, 2, 3]",
        "self.first().value() == 3 && self.last().value() == 2",
        "![].first().hasValue()",
    ] {
        assert!(eval(ints.clone(), rule, json!([3, 1, 1, 2])), "{rule}");
    }
    let rules = compile(with_rule(ints, json!({"rule": "self.slice(2, 1) == []"})));
    let errs = check(&rules, json!([1, 2, 3]));
    assert!(errs[0].message.contains("start index must be less than or equal to end index"), "{}", errs[0].message);
}

#[test]
fn semver_library() {
    let s = strings();
    for (rule, value) in [
        ("isSemver(self) && semver(self).major() == 1 && semver(self).minor() == 2 && semver(self).patch() == 3", "1.2.3"),
        ("semver(self).isGreaterThan(semver('1.2.3-rc.1'))", "1.2.3"),
        ("semver(self).isLessThan(semver('1.10.0'))", "1.9.0"),
        ("semver(self).compareTo(semver('1.0.0+build')) == 0", "1.0.0"),
        ("semver(self).isLessThan(semver('1.0.0-alpha.beta'))", "1.0.0-alpha.1"),
        ("!isSemver(self)", "01.2.3"),
        ("!isSemver(self)", "1.2"),
    ] {
        assert!(eval(s.clone(), rule, json!(value)), "{rule} on {value}");
    }
}

#[test]
fn regex_library() {
    let s = strings();
    assert!(eval(s.clone(), "self.find('[0-9]+') == '123'", json!("abc123def456")));
    assert!(eval(s.clone(), "self.findAll('[0-9]+') == ['123', '456']", json!("abc123def456")));
    assert!(eval(s.clone(), "self.findAll('[0-9]+', 1) == ['123']", json!("abc123def456")));
    assert!(eval(s, "self.find('x') == ''", json!("abc")));
}

#[test]
fn url_library() {
    let s = strings();
    for rule in [
        "isURL(self)",
        "url(self).getScheme() == 'https'",
        "url(self).getHost() == 'example.com:8443'",
        "url(self).getHostname() == 'example.com'",
        "url(self).getPort() == '8443'",
        "url(self).getEscapedPath() == '/a/b'",
        "url(self).getQuery() == {'x': ['1', '2'], 'y': ['z']}",
    ] {
        assert!(eval(s.clone(), rule, json!("https://example.com:8443/a/b?x=1&x=2&y=z")), "{rule}");
    }
    assert!(eval(s.clone(), "!isURL(self)", json!("not a url")));
    assert!(eval(s, "url(self).getHostname() == '::1'", json!("http://[::1]:80/")));
}

#[test]
fn ip_and_cidr_libraries() {
    let s = strings();
    for (rule, value) in [
        ("isIP(self) && ip(self).family() == 4", "192.168.0.1"),
        ("ip(self).family() == 6 && ip(self).isLoopback()", "::1"),
        ("ip(self).isUnspecified()", "0.0.0.0"),
        ("ip(self).isLinkLocalUnicast()", "169.254.1.1"),
        ("ip(self).isLinkLocalMulticast()", "224.0.0.5"),
        ("ip(self).isGlobalUnicast()", "8.8.8.8"),
        ("!isIP(self)", "1.2.3"),
        ("!isIP(self)", "::ffff:1.2.3.4"),
        ("ip.isCanonical(self)", "2001:db8::1"),
        ("!ip.isCanonical(self)", "2001:DB8::1"),
        ("string(ip(self)) == '10.0.0.1'", "10.0.0.1"),
        ("isCIDR(self) && cidr(self).prefixLength() == 8", "10.0.0.0/8"),
        ("cidr(self).containsIP('10.1.2.3') && !cidr(self).containsIP(ip('11.0.0.1'))", "10.0.0.0/8"),
        ("cidr(self).containsCIDR('10.1.0.0/16') && !cidr(self).containsCIDR(cidr('10.0.0.0/7'))", "10.0.0.0/8"),
        ("cidr(self).ip() == ip('10.1.2.3') && string(cidr(self).masked()) == '10.0.0.0/8'", "10.1.2.3/8"),
        ("!isCIDR(self)", "10.0.0.0/33"),
    ] {
        assert!(eval(s.clone(), rule, json!(value)), "{rule} on {value}");
    }
}

#[test]
fn quantity_library() {
    let s = strings();
    for (rule, value) in [
        ("isQuantity(self) && quantity(self) == quantity('1000')", "1k"),
        ("quantity(self).isGreaterThan(quantity('1Gi'))", "2Gi"),
        ("quantity(self).isLessThan(quantity('1'))", "500m"),
        ("quantity(self).compareTo(quantity('1Ki')) == 0", "1024"),
        ("quantity(self).add(quantity('500m')) == quantity('2')", "1500m"),
        ("quantity(self).sub(1) == quantity('1')", "2"),
        ("quantity(self).isInteger() && quantity(self).asInteger() == 2048", "2Ki"),
        ("!quantity(self).isInteger()", "1.5"),
        ("quantity(self).asApproximateFloat() == 1.5", "1500m"),
        ("quantity(self).sign() == -1", "-1"),
        ("!isQuantity(self)", "1.5.5"),
    ] {
        assert!(eval(s.clone(), rule, json!(value)), "{rule} on {value}");
    }
}

#[test]
fn format_library() {
    let s = strings();
    assert!(eval(s.clone(), "!format.dns1123Label().validate(self).hasValue()", json!("my-name")));
    assert!(eval(s.clone(), "format.dns1123Label().validate(self).hasValue()", json!("My_Name")));
    assert!(eval(s.clone(), "format.named('dns1123Subdomain').value().validate(self).hasValue() == false", json!("a.b")));
    assert!(eval(s.clone(), "!format.named('nope').hasValue()", json!("x")));
    let rules = compile(with_rule(
        s,
        json!({"rule": "!format.dns1035Label().validate(self).hasValue()",
               "messageExpression": "format.dns1035Label().validate(self).value().join(', ')"}),
    ));
    let errs = check(&rules, json!("1abc"));
    assert!(errs[0].message.contains("a DNS-1035 label must consist of lower case alphanumeric characters"), "{}", errs[0].message);
}

#[test]
fn sets_library() {
    let s = string_list();
    assert!(eval(s.clone(), "sets.contains(self, ['a'])", json!(["a", "b"])));
    assert!(eval(s.clone(), "sets.intersects(self, ['b', 'c'])", json!(["a", "b"])));
    assert!(eval(s, "sets.equivalent(self, ['b', 'a', 'a'])", json!(["a", "b"])));
}

#[test]
fn formats_map_to_timestamps_durations_bytes() {
    let schema = obj(json!({
        "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "format": "date-time"},
        "timeout": {"type": "string", "format": "duration"},
        "data": {"type": "string", "format": "byte", "maxLength": 100},
    }));
    let value = json!({"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T01:30:00Z", "timeout": "1h30m", "data": "aGVsbG8="});
    assert!(eval(schema.clone(), "self.end - self.start == self.timeout", value.clone()));
    assert!(eval(schema.clone(), "self.start < self.end && self.start.getFullYear() == 2024", value.clone()));
    assert!(eval(schema.clone(), "self.timeout > duration('1h')", value.clone()));
    assert!(eval(schema.clone(), "size(self.data) == 5 && self.data == b'hello'", value.clone()));
    assert!(eval(schema, "self.start + duration('90m') == self.end", value));
}

#[test]
fn int_or_string_is_dyn() {
    let schema = json!({"x-kubernetes-int-or-string": true});
    let rule = "type(self) == int ? self > 0 : self.endsWith('%')";
    assert!(eval(schema.clone(), rule, json!(3)));
    assert!(eval(schema.clone(), rule, json!("50%")));
    assert!(!eval(schema.clone(), rule, json!("50")));
    // A runtime overload error is kube's wording.
    let rules = compile(with_rule(schema, json!({"rule": "self > 0"})));
    let errs = check(&rules, json!("a"));
    assert!(
        errs[0].message.contains("call arguments did not match a supported operator, function or macro signature for rule: self > 0"),
        "{}",
        errs[0].message
    );
}

#[test]
fn maps_and_escaped_names() {
    let map = json!({"type": "object", "maxProperties": 10, "additionalProperties": {"type": "integer"}});
    assert!(eval(map.clone(), "self.all(k, k.startsWith('a')) && self['ab'] == 2", json!({"ab": 2, "ac": 3})));
    assert!(eval(map.clone(), "'ab' in self && !('zz' in self)", json!({"ab": 2})));
    assert!(eval(map, "size(self) == 2", json!({"a": 1, "b": 2})));
    let escaped = obj(json!({"foo-bar": {"type": "integer"}, "if": {"type": "integer"}, "a.b": {"type": "integer"}}));
    assert!(eval(escaped, "self.foo__dash__bar == 1 && self.__if__ == 2 && self.a__dot__b == 3", json!({"foo-bar": 1, "if": 2, "a.b": 3})));
}

#[test]
fn nested_objects_and_lists_of_objects() {
    let schema = obj(json!({
        "containers": {"type": "array", "maxItems": 10, "items": obj(json!({
            "name": {"type": "string", "maxLength": 63},
            "ports": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}
        }))}
    }));
    let value = json!({"containers": [{"name": "a", "ports": [80]}, {"name": "b", "ports": [443, 8443]}]});
    assert!(eval(schema.clone(), "self.containers.all(c, c.ports.all(p, p > 0 && p < 65536))", value.clone()));
    assert!(eval(schema.clone(), "self.containers.map(c, c.name) == ['a', 'b']", value.clone()));
    assert!(eval(schema, "self.containers.exists(c, has(c.ports) && 443 in c.ports)", value));
}

#[test]
fn resource_root_sees_metadata_name() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object"}},
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('a') && self.kind == 'Foo'"}]});
    let rules = match Rules::compile(&schema, "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations") {
        Ok(Some(r)) => r,
        other => panic!("{:?}", other.err()),
    };
    let mut b = Budget::new();
    let obj = json!({"apiVersion": "x/v1", "kind": "Foo", "metadata": {"name": "abc", "uid": "u"}, "spec": {}});
    assert!(rules.check(&obj, None, "", &mut b).is_empty());
    let obj = json!({"apiVersion": "x/v1", "kind": "Foo", "metadata": {"name": "xyz"}, "spec": {}});
    assert_eq!(rules.check(&obj, None, "", &mut b).len(), 1);
}

#[test]
fn runtime_errors_do_not_panic() {
    let schema = obj(json!({"n": {"type": "integer"}, "l": string_list()}));
    let rules = compile(with_rule(schema, json!({"rule": "self.n / 0 == 1 || self.l[5] == 'x'"})));
    for value in [json!({"n": 1}), json!({"n": "not a number"}), json!("scalar"), json!([1, 2]), json!({"l": "x"})] {
        let errs = check(&rules, value);
        assert_eq!(errs.len(), 1, "{errs:?}");
    }
    // A null value is not validated, as kube-apiserver.
    assert!(check(&rules, Value::Null).is_empty());
}

#[test]
fn uncompilable_garbage_never_panics() {
    let schema = obj(json!({"a": {"type": "string"}, "l": string_list()}));
    for rule in [
        "",
        ")",
        "self.",
        "self.a.",
        "[",
        "{",
        "{1:",
        "'unterminated",
        "\"\\u12\"",
        "self.a[?",
        "a.?b",
        "1 ? 2",
        "self.all()",
        "self.map(x)",
        "self.exists(1, 2)",
        "has(1)",
        "has(self)",
        "Foo{a: 1}",
        "self.l.all(x, x, x, x)",
        "9223372036854775808",
        "-9223372036854775809",
        "1.0e999",
        "b'\\xff' == b'\\377'",
        "🙂",
        "\u{0}",
        "self.a.matches('(')",
        "dyn(self).x.y.z",
        "optional.none().value()",
    ] {
        let _ = Rules::compile(&with_rule(schema.clone(), json!({"rule": rule})), AT);
    }
}

#[test]
fn bad_regex_at_runtime_is_an_error() {
    let rules = compile(with_rule(strings(), json!({"rule": "self.matches(self)"})));
    let errs = check(&rules, json!("("));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("evaluating rule: self.matches(self)"), "{}", errs[0].message);
}

/// `matches` runs the pattern compiled once and size-limited: a pattern whose program is huge
/// is an evaluation error, not seconds of compiling per call.
#[test]
fn oversized_regex_is_an_error() {
    let rules = compile(with_rule(string_list(), json!({"rule": "self.all(x, x.matches('(?:a{1000}){1000}'))"})));
    let errs = check(&rules, json!(["a", "b"]));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("error parsing regexp"), "{}", errs[0].message);
    assert!(eval(strings(), "matches(self, '^a+$') && self.matches('a')", json!("aaa")));
}

#[test]
fn sort_of_mixed_kinds_is_an_error() {
    let rules = compile(with_rule(
        json!({"type": "array", "maxItems": 4, "items": {"x-kubernetes-int-or-string": true}}),
        json!({"rule": "self.sort() == self"}),
    ));
    let errs = check(&rules, json!([1, "a", 2]));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(eval(
        json!({"type": "array", "maxItems": 4, "items": {"type": "number"}}),
        "self.sort() == [0.5, 1.5, 2.0]",
        json!([2.0, 0.5, 1.5])
    ));
}

#[test]
fn escaping_of_property_names() {
    assert_eq!(types::escape("foo").as_deref(), Some("foo"));
    assert_eq!(types::escape("foo-bar").as_deref(), Some("foo__dash__bar"));
    assert_eq!(types::escape("a__b").as_deref(), Some("a__underscores__b"));
    assert_eq!(types::escape("a/b.c").as_deref(), Some("a__slash__b__dot__c"));
    assert_eq!(types::escape("namespace").as_deref(), Some("__namespace__"));
    assert_eq!(types::escape("1abc"), None);
    assert_eq!(types::escape("a b"), None);
}

#[test]
fn go_durations() {
    assert_eq!(types::parse_go_duration("1h30m"), Some(chrono::Duration::minutes(90)));
    assert_eq!(types::parse_go_duration("-1.5s"), Some(chrono::Duration::milliseconds(-1500)));
    assert_eq!(types::parse_go_duration("300ms"), Some(chrono::Duration::milliseconds(300)));
    assert_eq!(types::parse_go_duration("0"), Some(chrono::Duration::zero()));
    assert_eq!(types::parse_go_duration("1d"), None);
    assert_eq!(types::parse_go_duration(""), None);
}

/// Rules at the nesting limit compile (on the parser's own thread) and evaluate on the test
/// thread's small stack.
#[test]
fn rules_at_the_nesting_limit_evaluate_on_a_small_stack() {
    let d = MAX_NESTING;
    let schema = json!({"type": "integer"});
    for src in [
        format!("{}true", "!".repeat(d)),
        format!("{}1{} == 1", "size([".repeat(d / 2), "])".repeat(d / 2)),
        format!("{}1{} != []", "[".repeat(d), "]".repeat(d)),
        format!("{}1{} != {{}}", "{1: ".repeat(d), "}".repeat(d)),
        format!("{}self > 0{}", "[1].all(x, ".repeat(d / 2), ")".repeat(d / 2)),
    ] {
        let rules = compile(with_rule(schema.clone(), json!({"rule": src})));
        assert!(check(&rules, json!(1)).is_empty(), "{src}");
    }
    let over = format!("{}1{} != []", "[".repeat(d + 1), "]".repeat(d + 1));
    assert!(Rules::compile(&with_rule(schema, json!({"rule": over})), AT).is_err());
}

#[test]
fn rules_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Rules>();
    assert_send_sync::<Budget>();
}

/// The messages of kube-apiserver's documentation, to the column and caret.
#[test]
fn compile_errors_match_kube_documentation() {
    let prefix = |rule: &str| {
        format!(
            "Invalid value: apiextensions.ValidationRule{{Rule:\"{rule}\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: "
        )
    };
    let e = compile_err(with_rule(json!({"type": "integer"}), json!({"rule": "self == true"})));
    assert_eq!(
        e[0].message,
        format!(
            "{}compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'\n | self == true\n | .....^",
            prefix("self == true")
        )
    );
    let e = compile_err(with_rule(obj(json!({"replicas": {"type": "integer"}})), json!({"rule": "self.nonExistingField > 0"})));
    assert_eq!(
        e[0].message,
        format!(
            "{}compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^",
            prefix("self.nonExistingField > 0")
        )
    );
    let e = compile_err(with_rule(obj(json!({})), json!({"rule": "self.a ="})));
    assert!(
        e[0].message.contains("compilation failed: ERROR: <input>:1:8: Syntax error: token recognition error at: '='"),
        "{}",
        e[0].message
    );
    let e = compile_err(with_rule(string_list(), json!({"rule": "self.all(x, y)"})));
    assert!(e[0]
        .message
        .ends_with("ERROR: <input>:1:13: undeclared reference to 'y' (in container '')\n | self.all(x, y)\n | ............^"));
}

#[test]
fn message_expression_cost_is_limited() {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let errs = compile_err(with_rule(schema, json!({"rule": "self.size() < 100", "messageExpression": "self.join(', ')"})));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].path, format!("{AT}[0].messageExpression"));
    assert!(errs[0].message.starts_with("Forbidden: estimated messageExpression cost exceeds budget by factor of"), "{}", errs[0].message);
}

#[test]
fn preserve_unknown_fields_is_dyn() {
    let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    assert!(eval(schema.clone(), "self.a.b == 1 && self.c[0] == 'x'", json!({"a": {"b": 1}, "c": ["x"]})));
    assert!(eval(schema.clone(), "!has(self.z)", json!({"a": 1})));
    // Declared properties of a preserving object are typed; the others are not visible.
    let typed = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "integer"}}});
    assert!(eval(typed.clone(), "self.a == 1", json!({"a": 1, "other": 2})));
    assert!(Rules::compile(&with_rule(typed, json!({"rule": "self.other == 2"})), AT).is_err());
}

#[test]
fn transition_rule_on_fields() {
    let schema = with_rule(
        obj(json!({"replicas": {"type": "integer"}})),
        json!({"rule": "self.replicas >= oldSelf.replicas", "message": "replicas may not decrease", "fieldPath": ".replicas"}),
    );
    let rules = compile(schema);
    let mut b = Budget::new();
    assert!(rules.check(&json!({"replicas": 3}), Some(&json!({"replicas": 2})), "spec", &mut b).is_empty());
    assert_eq!(
        messages(&rules.check(&json!({"replicas": 1}), Some(&json!({"replicas": 2})), "spec", &mut b)),
        vec!["spec.replicas: Invalid value: replicas may not decrease"]
    );
}

/// cel-rust counts a string's characters for `size()`: the runtime bound covers it, so a loop
/// calling it on a long string is refused before running (kube-apiserver, whose `size()` is
/// constant, would run it).
#[test]
fn runtime_bound_covers_string_size_in_loops() {
    let schema = with_rule(
        obj(json!({"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}, "s": {"type": "string", "maxLength": 100000}})),
        json!({"rule": "self.l.all(x, self.s.size() > x)"}),
    );
    let rules = compile(schema);
    let small = json!({"l": (0..1000).collect::<Vec<i32>>(), "s": "a".repeat(2000)});
    assert!(check(&rules, small).is_empty());
    let big = json!({"l": (0..1000).collect::<Vec<i32>>(), "s": "a".repeat(100000)});
    let errs = check(&rules, big);
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("call cost exceeds limit"), "{}", errs[0].message);
}

#[test]
fn invalid_formatted_strings_stay_strings() {
    let schema = obj(json!({"t": {"type": "string", "format": "date-time"}}));
    // A malformed date-time (the schema walker reports its format) is still a value to CEL.
    assert!(eval(schema, "has(self.t)", json!({"t": "yesterday"})));
}
