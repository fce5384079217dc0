//! Binary FieldsV1: decoding arbitrary bytes must not panic (nor overflow the stack or allocate
//! without bound); whatever decodes must survive encode → decode unchanged, and the re-encoded
//! bytes must be a fixed point.
#![no_main]

use fieldstore_codec::{fields_binary, fields_v1};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(set) = fields_binary::decode(data) else {
        return;
    };
    let bytes = fields_binary::encode(&set);
    let again = fields_binary::decode(&bytes).expect("re-encoded binary FieldsV1 decodes");
    assert_eq!(again, set, "binary round trip changed the set");
    assert_eq!(
        fields_binary::encode(&again),
        bytes,
        "binary re-encoding is not a fixed point"
    );
    // Any decoded set can be written as JSON (without panicking).
    let _ = fields_v1::to_json(&set);
});
