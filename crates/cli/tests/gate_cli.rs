//! `tinygpt gate` end to end on the local adapter: the reports as JSON, the
//! speed gate's decision in them, and a bad `--speed-gate` refused.

use std::process::Command;

fn tinygpt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tinygpt"))
        .args(args)
        .output()
        .expect("tinygpt runs")
}

#[test]
fn the_gate_reports_its_speed_decision_and_off_lets_precision_decide() {
    let out = tinygpt(&["gate", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &reports[0];
    assert_eq!(r["path"], "f16_storage");
    assert_eq!(r["passed"], true, "{r:#}");
    let s = &r["speed"];
    let ratio = s["f32_ms"].as_f64().unwrap() / s["fast_ms"].as_f64().unwrap();
    assert_eq!(s["margin"], 1.05);
    assert_eq!(
        r["active"],
        ratio >= 1.05,
        "active iff faster by the margin: {ratio}"
    );
    eprintln!("{}", r["lines"][1]);

    let out = tinygpt(&["gate", "--json", "--speed-gate", "off"]);
    assert!(out.status.success());
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &reports[0];
    assert_eq!(
        (&r["active"], &r["speed_forced"], &r["speed"]),
        (&true.into(), &true.into(), &serde_json::Value::Null)
    );

    let out = tinygpt(&["gate", "--speed-gate", "sometimes"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'sometimes' for '--speed-gate"),
        "{err}"
    );
}
