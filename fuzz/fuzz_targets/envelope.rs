//! The `k8s\x00` protobuf envelope: decoding arbitrary bytes must not panic; whatever decodes must
//! survive encode → decode and the JSON view round trip unchanged.
#![no_main]

use fieldstore_codec::Envelope;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(envelope) = Envelope::decode(data) else {
        return;
    };
    let bytes = envelope.encode();
    let again = Envelope::decode(&bytes).expect("re-encoded envelope decodes");
    assert_eq!(again, envelope, "envelope round trip changed it");
    assert_eq!(
        again.encode(),
        bytes,
        "envelope re-encoding is not a fixed point"
    );
    let view = envelope.to_json_view();
    let from_view = Envelope::from_json_view(&view).expect("JSON view decodes");
    assert_eq!(
        from_view, envelope,
        "JSON view round trip changed the envelope: {view}"
    );
});
