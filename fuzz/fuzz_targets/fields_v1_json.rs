//! FieldsV1 JSON: decoding arbitrary bytes must not panic; whatever decodes must survive
//! encode → decode unchanged, and the re-encoded bytes must be a fixed point.
#![no_main]

use fieldstore_codec::{fields_binary, fields_v1};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(set) = fields_v1::from_json(data) else {
        return;
    };
    let json = fields_v1::to_json(&set);
    let again = fields_v1::from_json(&json).expect("re-encoded FieldsV1 JSON decodes");
    assert_eq!(
        again,
        set,
        "JSON round trip changed the set; re-encoded: {}",
        String::from_utf8_lossy(&json)
    );
    assert_eq!(
        fields_v1::to_json(&again),
        json,
        "JSON re-encoding is not a fixed point"
    );
    // Every set the JSON form holds also round-trips through the binary form.
    let binary = fields_binary::encode(&set);
    assert_eq!(
        fields_binary::decode(&binary).expect("binary form decodes"),
        set
    );
});
