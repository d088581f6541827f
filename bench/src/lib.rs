//! The arithmetic and the formats of `pipeline-builder-bench`: medians, the scaling scenario
//! (one stream consumer over N messages), the `name: value` lines that scripts read, the JSON
//! line of `pipeline-builder load`, and a plain HTTP/1.1 answer.

use std::time::Instant;

use serde_json::json;
use shared::Compiled;

/// The median of some measurements (the mean of the middle two for an even count); 0 for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// How long `f` takes, in milliseconds.
pub fn time_ms(f: impl FnOnce()) -> f64 {
    let started = Instant::now();
    f();
    started.elapsed().as_secs_f64() * 1000.0
}

/// The median time of `runs` calls of `f`, in milliseconds.
pub fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    median((0..runs.max(1)).map(|_| time_ms(&mut f)).collect())
}

/// One stream consumer over `n` messages that may crash `crashes` times anywhere in its loop:
/// it commits its offset after the write and writes by key, so every requirement holds.
pub fn stream_scenario(n: usize, crashes: u32) -> (Compiled, serde_json::Value) {
    let messages: Vec<_> = (0..n)
        .map(|i| json!({"order_id": 1000 + i, "amount": format!("{}.25", i % 90 + 1)}))
        .collect();
    let scenario = serde_json::from_value(json!({
        "id": format!("stream-{n}"), "order": 1, "title": "scaling", "task": "-",
        "tables": [{"name": "paid_orders", "role": "sink", "columns": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "keys": [["order_id"]]}],
        "streams": [{"name": "orders_paid", "key_field": "order_id", "fields": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "messages": messages}],
        "failures": {"bound": crashes, "consumer_crash": {}},
        "palette": {"stream": {}, "stream_consumer": {}, "table": {}},
        "requirements": [
            {"id": "total", "text": "-", "hint": "-", "check": {"kind": "sum", "table": "paid_orders", "column": "amount"}},
            {"id": "complete", "text": "-", "hint": "-", "check": {"kind": "complete", "table": "paid_orders", "column": "order_id", "source": "orders_paid", "source_column": "order_id"}},
            {"id": "unique", "text": "-", "hint": "-", "check": {"kind": "unique", "table": "paid_orders", "columns": ["order_id"]}}
        ],
        "reference_designs": [], "wrong_designs": []
    }))
    .expect("the scaling scenario parses");
    let scenario = Compiled::new(scenario).expect("the scaling scenario compiles");
    let design = json!({
        "nodes": [
            {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "after_write"}},
            {"id": "sink", "kind": "table", "options": {"table": "paid_orders", "write": "insert_ignore"}}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "sink"}]
    });
    (scenario, design)
}

/// One measured case of the scaling section.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingCase {
    pub crashes: u32,
    pub messages: usize,
    pub schedules: u64,
    /// How many checks the time is the median of.
    pub runs: usize,
    pub ms: f64,
    /// Steps the search simulated (`shared::check::search_stats`).
    pub steps: u64,
    /// Times the search reached a state it had met before and stopped there.
    pub merged: u64,
    /// The same check by the plain enumeration (every schedule run from the start), where it
    /// was timed.
    pub plain_ms: Option<f64>,
    /// The most heap the check held at once beyond what was held before it, where measured.
    pub peak_bytes: Option<u64>,
}

impl ScalingCase {
    pub fn label(&self) -> &'static str {
        match self.crashes {
            1 => "one_crash",
            2 => "two_crashes",
            _ => "crashes",
        }
    }

    /// The time of the check divided by schedules × messages, in nanoseconds.
    pub fn ns_per_schedule_message(&self) -> f64 {
        let work = self.schedules as f64 * self.messages as f64;
        if work > 0.0 {
            self.ms * 1e6 / work
        } else {
            0.0
        }
    }

    /// The time of the check divided by the steps it simulated, in nanoseconds.
    pub fn ns_per_step(&self) -> f64 {
        if self.steps > 0 {
            self.ms * 1e6 / self.steps as f64
        } else {
            0.0
        }
    }

    /// The time of the check divided by the messages, in microseconds.
    pub fn us_per_message(&self) -> f64 {
        if self.messages > 0 {
            self.ms * 1e3 / self.messages as f64
        } else {
            0.0
        }
    }

    /// `scaling: one_crash crashes=1 messages=1000 schedules=3001 runs=1 ms=12.345
    /// ns_per_schedule_message=4.1 steps=… …`, with `plain_ms` when it was timed.
    pub fn line(&self) -> String {
        let mut text = format!(
            "{} crashes={} messages={} schedules={} runs={} ms={:.3} ns_per_schedule_message={:.2} steps={} states_merged={} ns_per_step={:.1} us_per_message={:.2}",
            self.label(),
            self.crashes,
            self.messages,
            self.schedules,
            self.runs,
            self.ms,
            self.ns_per_schedule_message(),
            self.steps,
            self.merged,
            self.ns_per_step(),
            self.us_per_message()
        );
        if let Some(peak) = self.peak_bytes {
            text.push_str(&format!(" peak_kib={:.1}", peak as f64 / 1024.0));
        }
        if let Some(plain) = self.plain_ms {
            text.push_str(&format!(" plain_ms={plain:.3}"));
        }
        line("scaling", text)
    }
}

/// A line for scripts: `name: value`.
pub fn line(name: &str, value: impl std::fmt::Display) -> String {
    format!("{name}: {value}")
}

/// Splits a `name: value` line; the name is lower-case letters, digits and `_`.
pub fn parse_line(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once(": ")?;
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    (ok && !value.trim().is_empty()).then(|| (name, value.trim()))
}

/// The `key=value` pairs of a value such as `one_crash messages=10 schedules=31`, with the
/// words that are not pairs.
pub fn parse_pairs(value: &str) -> (Vec<&str>, Vec<(&str, &str)>) {
    let mut words = Vec::new();
    let mut pairs = Vec::new();
    for part in value.split_whitespace() {
        match part.split_once('=') {
            Some((k, v)) => pairs.push((k, v)),
            None => words.push(part),
        }
    }
    (words, pairs)
}

/// What `pipeline-builder load` measured, from the JSON line it prints last.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadRun {
    pub seconds: f64,
    pub requests: u64,
    pub errors: u64,
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Reads the last JSON line of `pipeline-builder load`'s output: the whole run.
pub fn parse_load_summary(stdout: &str) -> Result<LoadRun, String> {
    load_run(stdout, None)
}

/// The same for one kind of request of a mix (`check`, `submit`, `catalogue`): its requests,
/// errors and latencies, over the run's seconds.
pub fn parse_load_kind(stdout: &str, kind: &str) -> Result<LoadRun, String> {
    load_run(stdout, Some(kind))
}

fn load_run(stdout: &str, kind: Option<&str>) -> Result<LoadRun, String> {
    let json = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or("the load generator printed no JSON line")?;
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("the load generator's JSON line: {e}"))?;
    let number = |path: &[&str]| -> Result<f64, String> {
        let mut at = &v;
        for key in path {
            at = at
                .get(key)
                .ok_or_else(|| format!("the load generator's JSON has no {}", path.join(".")))?;
        }
        at.as_f64()
            .ok_or_else(|| format!("{} is not a number", path.join(".")))
    };
    let seconds = number(&["seconds"])?;
    let of = |field: &[&str]| -> Result<f64, String> {
        match kind {
            None => number(field),
            Some(kind) => number(&[&["by_kind", kind], field].concat()),
        }
    };
    let requests = of(&["requests"])?;
    Ok(LoadRun {
        seconds,
        requests: requests as u64,
        errors: of(&["errors"])? as u64,
        requests_per_second: match kind {
            None => number(&["requests_per_second"])?,
            Some(_) if seconds > 0.0 => requests / seconds,
            Some(_) => 0.0,
        },
        p50_ms: of(&["latency_ms", "p50"])?,
        p99_ms: of(&["latency_ms", "p99"])?,
    })
}

/// The status and body of a whole HTTP/1.1 answer (as read from a connection the server
/// closed), with a `Content-Length` or chunked body.
pub fn http_answer(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer has no end of headers")?;
    let head =
        std::str::from_utf8(&raw[..split]).map_err(|_| "the answer's headers are not text")?;
    let mut rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("the answer has no status")?;
    let mut length = None;
    let mut chunked = false;
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| "a bad Content-Length")?);
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.eq_ignore_ascii_case("chunked")
        {
            chunked = true;
        }
    }
    if chunked {
        let mut body = Vec::new();
        loop {
            let end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("a chunk has no size line")?;
            let size_text = std::str::from_utf8(&rest[..end]).map_err(|_| "a bad chunk size")?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| "a bad chunk size")?;
            rest = &rest[end + 2..];
            if size == 0 {
                return Ok((status, body));
            }
            if rest.len() < size + 2 {
                return Err("a chunk is cut short".into());
            }
            body.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
    }
    match length {
        Some(n) if rest.len() < n => Err(format!(
            "the body is cut short: {} of {n} bytes",
            rest.len()
        )),
        Some(n) => Ok((status, rest[..n].to_vec())),
        None => Ok((status, rest.to_vec())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value() {
        assert_eq!(median(vec![5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn metric_lines_are_read_back() {
        assert_eq!(
            parse_line(&line("check_p99_ms", format!("{:.2}", 12.3456))),
            Some(("check_p99_ms", "12.35"))
        );
        assert_eq!(
            parse_line("Engine check: 3 ms"),
            None,
            "a table line is not a metric"
        );
        assert_eq!(parse_line("wasm_gzip_bytes: "), None);
        let case = ScalingCase {
            crashes: 1,
            messages: 100,
            schedules: 301,
            runs: 5,
            ms: 3.01,
            steps: 1800,
            merged: 297,
            plain_ms: Some(12.0),
            peak_bytes: None,
        };
        let text = case.line();
        let (name, value) = parse_line(&text).unwrap();
        assert_eq!(name, "scaling");
        let (words, pairs) = parse_pairs(value);
        assert_eq!(words, ["one_crash"]);
        assert_eq!(
            pairs,
            [
                ("crashes", "1"),
                ("messages", "100"),
                ("schedules", "301"),
                ("runs", "5"),
                ("ms", "3.010"),
                ("ns_per_schedule_message", "100.00"),
                ("steps", "1800"),
                ("states_merged", "297"),
                ("ns_per_step", "1672.2"),
                ("us_per_message", "30.10"),
                ("plain_ms", "12.000")
            ]
        );
    }

    #[test]
    fn the_load_generators_json_line_is_read() {
        let out = "64 clients for 5.0 s against http://x: 10 requests\nkind ...\n{\"url\":\"http://x\",\"clients\":64,\"seconds\":5.01,\"requests\":1000,\"errors\":2,\"errors_by_status\":{\"429\":2},\"requests_per_second\":199.6,\"latency_ms\":{\"p50\":1.5,\"p90\":2.0,\"p99\":7.25,\"max\":9.0},\"by_kind\":{}}\n";
        let run = parse_load_summary(out).unwrap();
        assert_eq!(
            run,
            LoadRun {
                seconds: 5.01,
                requests: 1000,
                errors: 2,
                requests_per_second: 199.6,
                p50_ms: 1.5,
                p99_ms: 7.25
            }
        );
        assert!(parse_load_summary("no json here").is_err());
        assert!(parse_load_summary("{\"seconds\":1}").is_err());
        let mix = "{\"seconds\":2.0,\"requests\":10,\"errors\":1,\"requests_per_second\":5.0,\"latency_ms\":{\"p50\":1.0,\"p99\":2.0},\"by_kind\":{\"submit\":{\"requests\":4,\"errors\":1,\"latency_ms\":{\"p50\":3.0,\"p90\":4.0,\"p99\":5.5,\"max\":6.0}}}}\n";
        assert_eq!(
            parse_load_kind(mix, "submit").unwrap(),
            LoadRun {
                seconds: 2.0,
                requests: 4,
                errors: 1,
                requests_per_second: 2.0,
                p50_ms: 3.0,
                p99_ms: 5.5
            }
        );
        assert!(parse_load_kind(mix, "grade").is_err());
    }

    #[test]
    fn http_answers_are_read_with_a_length_or_in_chunks() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}";
        assert_eq!(http_answer(plain).unwrap(), (200, b"{\"a\":1}".to_vec()));
        let chunked = b"HTTP/1.1 422 Unprocessable Entity\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n";
        assert_eq!(http_answer(chunked).unwrap(), (422, b"{\"a\":1}".to_vec()));
        assert!(http_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}").is_err());
    }

    #[test]
    fn the_scaling_stream_explores_a_schedule_per_crash_point() {
        let (scenario, design) = stream_scenario(10, 1);
        let verdict = shared::check_json(&scenario, &design).unwrap();
        assert!(verdict.passed, "the scaling design is correct");
        assert!(
            verdict.schedules_explored > 10,
            "one crash can come at any message: {}",
            verdict.schedules_explored
        );
        let case = ScalingCase {
            crashes: 1,
            messages: 10,
            schedules: verdict.schedules_explored,
            runs: 1,
            ms: 1.0,
            steps: 0,
            merged: 0,
            plain_ms: None,
            peak_bytes: None,
        };
        assert!(
            (case.ns_per_schedule_message() - 1e6 / (10.0 * verdict.schedules_explored as f64))
                .abs()
                < 1e-9
        );
    }
}
