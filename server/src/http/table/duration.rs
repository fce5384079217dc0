//! Ages as Kubernetes prints them: apimachinery's `duration.HumanDuration` (`45s`, `5m3s`,
//! `3h20m`, `2d`, `1y30d`) of the time since an RFC 3339 timestamp.

/// How long ago `rfc3339` was at `now` (Unix seconds), as printers' `translateTimestampSince`
/// writes it: `<unknown>` for a missing or unreadable time.
pub(crate) fn since(rfc3339: Option<&str>, now: i64) -> String {
    match rfc3339.and_then(fieldstore_codec::rfc3339::parse) {
        Some((secs, _)) => human(now - secs),
        None => "<unknown>".into(),
    }
}

/// `duration.HumanDuration` of `seconds`: up to 2s in the future reads as now (clock skew),
/// further is `<invalid>`.
pub(crate) fn human(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{d}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_as_apimachinery_writes_them() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (303, "5m3s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (5 * 3600, "5h"),
            (47 * 3600, "47h"),
            (2 * 86400, "2d"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (30 * 86400, "30d"),
            (2 * 365 * 86400 + 30 * 86400, "2y30d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human(secs), want, "{secs}s");
        }
        assert_eq!(since(Some("2024-01-01T00:00:00Z"), 1_704_067_200 + 303), "5m3s");
        assert_eq!(since(None, 0), "<unknown>");
        assert_eq!(since(Some("yesterday"), 0), "<unknown>");
    }
}
