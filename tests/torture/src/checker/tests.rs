//! Hand-written histories, good and bad, for every rule. Timestamps are
//! small numbers (ns); `ttl_ms` 1 makes any pause over 1,000,000 ns "past
//! the TTL".

use super::*;
use crate::history;

fn run(text: &str) -> Report {
    check(&history::parse(text).expect("history parses"))
}

fn rules(report: &Report) -> Vec<&'static str> {
    let mut r: Vec<_> = report.violations.iter().map(|v| v.rule).collect();
    r.sort_unstable();
    r.dedup();
    r
}

const META: &str = r#"{"ev":"meta","url":"sqlite:x.db","eager":true,"ttl_ms":1}"#;
const META_LAZY: &str =
    r#"{"ev":"meta","url":"sqlite:x.db?eager_fencing=false","eager":false,"ttl_ms":1}"#;

fn lines(parts: &[&str]) -> String {
    let mut s = parts.join("\n");
    s.push('\n');
    s
}

/// One holder after another, each through the whole cycle, and a final
/// read of the newest value.
const GOOD: &[&str] = &[
    META,
    r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
    r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"token":1}"#,
    r#"{"ev":"invoke","p":"w1.0","n":2,"ts":12,"op":"claim","scope":"s","token":1}"#,
    r#"{"ev":"ok","p":"w1.0","n":2,"ts":13}"#,
    r#"{"ev":"invoke","p":"w1.0","n":3,"ts":14,"op":"get","scope":"s","key":"a","token":1}"#,
    r#"{"ev":"ok","p":"w1.0","n":3,"ts":15}"#,
    r#"{"ev":"invoke","p":"w1.0","n":4,"ts":16,"op":"put","scope":"s","key":"a","token":1,"seq":1,"value":"w1.0:4"}"#,
    r#"{"ev":"ok","p":"w1.0","n":4,"ts":17,"version":1}"#,
    r#"{"ev":"invoke","p":"w1.0","n":5,"ts":18,"op":"renew","scope":"s","token":1}"#,
    r#"{"ev":"ok","p":"w1.0","n":5,"ts":19}"#,
    r#"{"ev":"invoke","p":"w1.0","n":6,"ts":20,"op":"release","scope":"s","token":1}"#,
    r#"{"ev":"ok","p":"w1.0","n":6,"ts":21,"released":true}"#,
    r#"{"ev":"invoke","p":"w2.0","n":1,"ts":22,"op":"acquire","scope":"s"}"#,
    r#"{"ev":"ok","p":"w2.0","n":1,"ts":23,"token":2}"#,
    r#"{"ev":"invoke","p":"w2.0","n":2,"ts":24,"op":"put","scope":"s","key":"a","token":2,"seq":1,"value":"w2.0:2"}"#,
    r#"{"ev":"ok","p":"w2.0","n":2,"ts":25,"version":2}"#,
    r#"{"ev":"invoke","p":"final","n":1,"ts":30,"op":"get","scope":"s","key":"a"}"#,
    r#"{"ev":"ok","p":"final","n":1,"ts":31,"value":"w2.0:2","wtoken":2}"#,
];

#[test]
fn a_clean_history_has_no_violation() {
    let r = run(&lines(GOOD));
    assert_eq!(r.violations, vec![]);
    assert_eq!(r.operations, 8);
    assert_eq!(r.accepted_writes, 3);
    assert_eq!(r.final_reads, 1);
    assert_eq!(r.indeterminate, 0);
}

#[test]
fn the_same_token_acquired_twice() {
    let r = run(&lines(&[
        META,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":11,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":12,"token":4}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":13,"token":4}"#,
    ]));
    assert_eq!(rules(&r), ["duplicate-token"]);
    // The same token in two scopes is fine: tokens are per scope.
    let r = run(&lines(&[
        META,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":11,"op":"acquire","scope":"t"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":12,"token":4}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":13,"token":4}"#,
    ]));
    assert_eq!(r.violations, vec![]);
}

#[test]
fn a_token_below_an_earlier_acquisition() {
    let bad = [
        META,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":12,"token":5}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":21,"token":3}"#,
    ];
    assert_eq!(rules(&run(&lines(&bad))), ["token-not-increasing"]);
    // Overlapping acquisitions may complete in either order.
    let overlapping = [
        META,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":11,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":12,"token":5}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":13,"token":3}"#,
    ];
    assert_eq!(run(&lines(&overlapping)).violations, vec![]);
}

#[test]
fn an_accepted_token_below_an_earlier_accepted_one() {
    let r = run(&lines(&[
        META_LAZY,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"put","scope":"s","key":"a","token":5,"value":"v1"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"version":1}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"claim","scope":"s","token":3}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":21}"#,
        r#"{"ev":"invoke","p":"final","n":1,"ts":30,"op":"get","scope":"s","key":"a"}"#,
        r#"{"ev":"ok","p":"final","n":1,"ts":31,"value":"v1","wtoken":5}"#,
    ]));
    // An accepted write also tells its token, so rule 3 fires with rule 1.
    assert_eq!(rules(&r), ["below-told-fence", "token-decreased"]);
}

#[test]
fn a_write_accepted_below_a_fence_someone_was_told() {
    let stale_then_accepted = |stale_done: u64| {
        lines(&[
            META,
            r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"put","scope":"s","key":"a","token":2,"value":"v1"}"#,
            &format!(
                r#"{{"ev":"fail","p":"w1.0","n":1,"ts":{stale_done},"code":"STALE_TOKEN","current":4}}"#
            ),
            r#"{"ev":"invoke","p":"w3.0","n":1,"ts":20,"op":"claim","scope":"s","token":3}"#,
            r#"{"ev":"ok","p":"w3.0","n":1,"ts":40}"#,
        ])
    };
    // w1 learned "fence >= 4" before w3's claim with 3 began.
    assert_eq!(rules(&run(&stale_then_accepted(15))), ["below-told-fence"]);
    // Concurrent with it: no real-time order, no violation.
    assert_eq!(run(&stale_then_accepted(30)).violations, vec![]);
}

#[test]
fn eager_fencing_makes_an_acquisition_tell_the_fence() {
    let history = |meta: &str| {
        lines(&[
            meta,
            r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
            r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"token":7}"#,
            r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"acquire","scope":"s"}"#,
            r#"{"ev":"fail","p":"w2.0","n":1,"ts":21,"code":"LEASE_HELD","current":7}"#,
            r#"{"ev":"invoke","p":"w3.0","n":1,"ts":30,"op":"claim","scope":"s","token":6}"#,
            r#"{"ev":"ok","p":"w3.0","n":1,"ts":31}"#,
        ])
    };
    assert_eq!(rules(&run(&history(META))), ["below-told-fence"]);
    // Without eager fencing the old holder may write until the new one does.
    assert_eq!(run(&history(META_LAZY)).violations, vec![]);
}

fn final_read(value: Option<(&str, u64)>) -> String {
    match value {
        Some((v, t)) => {
            format!(r#"{{"ev":"ok","p":"final","n":1,"ts":100,"value":"{v}","wtoken":{t}}}"#)
        }
        None => r#"{"ev":"ok","p":"final","n":1,"ts":100}"#.to_owned(),
    }
}

/// Two acknowledged puts (token 1 then 2) and one indeterminate (token 3,
/// its process killed), then the final read.
fn writes_then_read(read: Option<(&str, u64)>) -> Report {
    run(&lines(&[
        META_LAZY,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"put","scope":"s","key":"a","token":1,"seq":1,"value":"one"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"version":1}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"put","scope":"s","key":"a","token":2,"seq":1,"value":"two"}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":21,"version":2}"#,
        r#"{"ev":"invoke","p":"w3.0","n":1,"ts":30,"op":"put","scope":"s","key":"a","token":3,"seq":1,"value":"three"}"#,
        r#"{"ev":"kill","p":"w3.0","ts":35}"#,
        r#"{"ev":"invoke","p":"w4.0","n":1,"ts":40,"op":"put","scope":"s","key":"a","token":1,"seq":2,"value":"stale"}"#,
        r#"{"ev":"fail","p":"w4.0","n":1,"ts":41,"code":"STALE_TOKEN","current":2}"#,
        r#"{"ev":"invoke","p":"w5.0","n":1,"ts":42,"op":"put","scope":"s","key":"b","token":2,"seq":2,"value":"other-key"}"#,
        r#"{"ev":"ok","p":"w5.0","n":1,"ts":43,"version":1}"#,
        r#"{"ev":"invoke","p":"final","n":2,"ts":90,"op":"get","scope":"s","key":"b"}"#,
        r#"{"ev":"ok","p":"final","n":2,"ts":91,"value":"other-key","wtoken":2}"#,
        r#"{"ev":"invoke","p":"final","n":1,"ts":99,"op":"get","scope":"s","key":"a"}"#,
        &final_read(read),
    ]))
}

#[test]
fn acknowledged_writes_survive() {
    // The newest acknowledged value, or the indeterminate newer one: fine.
    let r = writes_then_read(Some(("two", 2)));
    assert_eq!(r.violations, vec![]);
    assert_eq!((r.indeterminate, r.kills, r.stale_rejections), (1, 1, 1));
    assert_eq!(writes_then_read(Some(("three", 3))).violations, vec![]);
    // An older value, or nothing, loses "two".
    assert_eq!(rules(&writes_then_read(Some(("one", 1)))), ["lost-write"]);
    assert_eq!(rules(&writes_then_read(None)), ["lost-write"]);
    // A value nobody wrote, one written to another key, a wrong entry token.
    assert_eq!(
        rules(&writes_then_read(Some(("nobody", 2)))),
        ["phantom-value"]
    );
    assert_eq!(
        rules(&writes_then_read(Some(("other-key", 2)))),
        ["phantom-value"]
    );
    assert_eq!(
        rules(&writes_then_read(Some(("two", 5)))),
        ["phantom-value"]
    );
    // The rejected write's value.
    assert_eq!(
        rules(&writes_then_read(Some(("stale", 1)))),
        ["rejected-write-visible"]
    );
}

#[test]
fn an_acknowledged_write_never_read_back_is_reported() {
    let r = run(&lines(&GOOD[..GOOD.len() - 2]));
    assert_eq!(rules(&r), ["unverified-write"]);
}

/// w1 holds token 1 and is stopped from 100 to `resume`; w2 acquires token
/// 2 at 200 (or not at all); w1 then writes with token 1.
fn paused(resume: u64, takeover: bool, outcome: &str) -> Report {
    let mut h = vec![
        META.to_owned(),
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#.to_owned(),
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"token":1}"#.to_owned(),
        r#"{"ev":"pause","p":"w1.0","ts":100}"#.to_owned(),
    ];
    if takeover {
        h.push(
            r#"{"ev":"invoke","p":"w2.0","n":1,"ts":150,"op":"acquire","scope":"s"}"#.to_owned(),
        );
        h.push(r#"{"ev":"ok","p":"w2.0","n":1,"ts":200,"token":2}"#.to_owned());
    }
    h.push(format!(r#"{{"ev":"resume","p":"w1.0","ts":{resume}}}"#));
    h.push(format!(
        r#"{{"ev":"invoke","p":"w1.0","n":2,"ts":{},"op":"claim","scope":"s","token":1}}"#,
        resume + 10
    ));
    h.push(format!(
        r#"{{"ev":"{outcome}","p":"w1.0","n":2,"ts":{},"code":"STALE_TOKEN","current":2}}"#,
        resume + 11
    ));
    let refs: Vec<&str> = h.iter().map(String::as_str).collect();
    run(&lines(&refs))
}

#[test]
fn a_paused_holder_must_be_rejected_after_a_takeover() {
    const PAST_TTL: u64 = 100 + 2_000_000;
    let r = paused(PAST_TTL, true, "ok");
    assert!(rules(&r).contains(&"paused-write-accepted"), "{r:?}");
    assert_eq!(
        (r.pauses, r.paused_past_ttl, r.pauses_with_takeover),
        (1, 1, 1)
    );
    let r = paused(PAST_TTL, true, "fail");
    assert_eq!(r.violations, vec![]);
    assert_eq!(r.pauses_with_takeover, 1);
}

#[test]
fn a_paused_holder_without_a_takeover_may_write() {
    const PAST_TTL: u64 = 100 + 2_000_000;
    let r = paused(PAST_TTL, false, "ok");
    assert_eq!(r.violations, vec![]);
    assert_eq!((r.paused_past_ttl, r.pauses_without_takeover), (1, 1));
}

#[test]
fn a_short_pause_is_not_past_the_ttl() {
    // 900,000 ns < ttl 1 ms: rule 5 does not apply (rule 3 still does).
    let r = paused(100 + 900_000, true, "ok");
    assert_eq!(r.paused_past_ttl, 0);
    assert_eq!(rules(&r), ["below-told-fence"]);
}

#[test]
fn malformed_histories_are_reported() {
    let r = run(&lines(&[
        META,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"token":1}"#,
    ]));
    assert_eq!(rules(&r), ["malformed-history"]);
    let r = run(&lines(&[META, r#"{"ev":"resume","p":"w1.0","ts":11}"#]));
    assert_eq!(rules(&r), ["malformed-history"]);
}

#[test]
fn a_torn_last_line_is_dropped_and_others_are_errors() {
    let mut text = lines(GOOD);
    text.push_str(r#"{"ev":"invoke","p":"w9.0","n":1,"ts":4"#);
    assert_eq!(history::parse(&text).unwrap().len(), GOOD.len());
    let torn_inside = format!("{}\n{}", r#"{"ev":"invoke","p""#, lines(GOOD));
    assert!(history::parse(&torn_inside).is_err());
}

#[test]
fn records_round_trip_through_json() {
    for line in GOOD {
        let r = history::Record::parse(line).unwrap();
        assert_eq!(history::Record::parse(&r.to_json().to_string()).unwrap(), r);
    }
}

// ----- retirement: the lives of a scope name (rules 2 and 6) -----

fn issue(p: &str, n: u64, ts: u64, op: &str, token: u64) -> [String; 2] {
    [
        format!(r#"{{"ev":"invoke","p":"{p}","n":{n},"ts":{ts},"op":"{op}","scope":"x"}}"#),
        format!(
            r#"{{"ev":"ok","p":"{p}","n":{n},"ts":{},"token":{token}}}"#,
            ts + 1
        ),
    ]
}

/// A retire of "x" invoked at `ts`, completed at `done`, with `outcome`
/// (`"true"`/`"false"`: returned; a code: failed; `""`: no outcome).
fn retire(p: &str, n: u64, ts: u64, done: u64, outcome: &str) -> Vec<String> {
    let mut v = vec![format!(
        r#"{{"ev":"invoke","p":"{p}","n":{n},"ts":{ts},"op":"retire","scope":"x"}}"#
    )];
    match outcome {
        "" => {}
        "true" | "false" => v.push(format!(
            r#"{{"ev":"ok","p":"{p}","n":{n},"ts":{done},"retired":{outcome}}}"#
        )),
        code => v.push(format!(
            r#"{{"ev":"fail","p":"{p}","n":{n},"ts":{done},"code":"{code}"}}"#
        )),
    }
    v
}

fn history(parts: Vec<Vec<String>>) -> Report {
    let mut all = vec![META.to_owned()];
    all.extend(parts.into_iter().flatten());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    run(&lines(&refs))
}

#[test]
fn lives_that_continue_above_each_other_are_clean() {
    let r = history(vec![
        issue("w1.0", 1, 10, "next_token", 1).into(),
        issue("w1.0", 2, 20, "acquire", 2).into(),
        retire("w2.0", 1, 25, 26, "LEASE_HELD"),
        retire("w2.0", 2, 40, 41, "true"),
        retire("w2.0", 3, 42, 43, "false"),
        // The same name again: above everything of its first life.
        issue("w1.0", 3, 50, "next_token", 3).into(),
        retire("w2.0", 4, 60, 61, "true"),
        issue("w3.0", 1, 70, "acquire", 4).into(),
    ]);
    assert_eq!(r.violations, vec![]);
    assert_eq!(r.tokens_issued, 4);
    assert_eq!(
        (
            r.retires_accepted,
            r.retires_refused,
            r.retires_empty,
            r.retires_unknown
        ),
        (2, 1, 1, 0)
    );
    assert_eq!((r.lives, r.duplicates), (3, 0));
}

#[test]
fn a_token_issued_twice_across_lives() {
    // The re-created scope began at a stale floor and issued 2 again.
    let r = history(vec![
        issue("w1.0", 1, 10, "next_token", 1).into(),
        issue("w1.0", 2, 20, "next_token", 2).into(),
        retire("w2.0", 1, 30, 31, "true"),
        issue("w3.0", 1, 40, "next_token", 2).into(),
    ]);
    assert_eq!(rules(&r), ["below-earlier-life", "duplicate-token"]);
    assert_eq!((r.duplicates, r.lives), (1, 2));
    // Racing the retire (the bug as PostgreSQL showed it): the order is
    // unknown, but one name never issues one token twice.
    let r = history(vec![
        issue("w1.0", 1, 10, "next_token", 1).into(),
        retire("w2.0", 1, 30, 45, "true"),
        issue("w1.0", 2, 31, "next_token", 2).into(),
        issue("w3.0", 1, 40, "acquire", 2).into(),
    ]);
    assert_eq!(rules(&r), ["duplicate-token"]);
    let detail = &r.violations[0].detail;
    assert!(detail.contains("life 1 to 2"), "{detail}");
}

#[test]
fn a_later_life_starts_above_what_the_earlier_one_accepted() {
    // Token 9 was accepted (from outside the counter): the floor is 9.
    let accepted_then = |after: [String; 2]| {
        history(vec![
            issue("w1.0", 1, 10, "next_token", 1).into(),
            vec![
                r#"{"ev":"invoke","p":"w1.0","n":2,"ts":20,"op":"claim","scope":"x","token":9}"#
                    .into(),
                r#"{"ev":"ok","p":"w1.0","n":2,"ts":21}"#.into(),
            ],
            retire("w2.0", 1, 30, 31, "true"),
            after.into(),
        ])
    };
    // The counter issues above the fence in any life, so rule 8 sees it too.
    let r = accepted_then(issue("w3.0", 1, 40, "next_token", 9));
    assert_eq!(
        rules(&r),
        ["below-earlier-life", "issued-not-above-accepted"]
    );
    assert_eq!(r.duplicates, 0);
    assert_eq!(
        rules(&accepted_then(issue("w3.0", 1, 40, "acquire", 5))),
        ["below-earlier-life", "issued-not-above-accepted"]
    );
    assert_eq!(
        accepted_then(issue("w3.0", 1, 40, "next_token", 10)).violations,
        vec![]
    );
    // The floor itself is sealed: a write with 9 in the new life is stale.
    let claim9 = [
        r#"{"ev":"invoke","p":"w3.0","n":1,"ts":40,"op":"claim","scope":"x","token":9}"#.to_owned(),
        r#"{"ev":"ok","p":"w3.0","n":1,"ts":41}"#.to_owned(),
    ];
    assert_eq!(rules(&accepted_then(claim9)), ["below-earlier-life"]);
}

/// Token 9 accepted, a retire with `outcome`, then 9 accepted again (fine
/// within one life: an unsealed fence accepts its own token again).
fn rewrite_across(outcome: &str) -> Report {
    let claim = |p: &str, ts: u64| {
        vec![
            format!(
                r#"{{"ev":"invoke","p":"{p}","n":1,"ts":{ts},"op":"claim","scope":"x","token":9}}"#
            ),
            format!(r#"{{"ev":"ok","p":"{p}","n":1,"ts":{}}}"#, ts + 1),
        ]
    };
    history(vec![
        claim("w1.0", 10),
        retire("w2.0", 1, 20, 21, outcome),
        claim("w3.0", 30),
    ])
}

#[test]
fn only_a_retire_that_returned_true_ends_a_life() {
    for outcome in ["LEASE_HELD", "INVALID_ARGUMENT", "false"] {
        let r = rewrite_across(outcome);
        assert_eq!(r.violations, vec![], "{outcome}");
        assert_eq!(r.lives, 1, "{outcome}");
    }
    assert_eq!(rewrite_across("LEASE_HELD").retires_refused, 1);
    assert_eq!(rewrite_across("false").retires_empty, 1);
    // The same history after a retire that did happen is a violation.
    assert_eq!(rules(&rewrite_across("true")), ["below-earlier-life"]);
    assert_eq!(rewrite_across("true").lives, 2);
}

#[test]
fn a_retire_of_unknown_outcome_neither_hides_nor_invents() {
    // BACKEND or no outcome: it may have ended the life or not. Nothing is
    // demanded that only a known retire implies...
    for outcome in ["BACKEND", ""] {
        let r = rewrite_across(outcome);
        assert_eq!(r.violations, vec![], "{outcome:?}");
        assert_eq!((r.lives, r.retires_unknown), (1, 1), "{outcome:?}");
    }
    // ...but a token issued twice is a duplicate whatever the retire did.
    let r = history(vec![
        issue("w1.0", 1, 10, "next_token", 3).into(),
        retire("w2.0", 1, 20, 21, "BACKEND"),
        issue("w3.0", 1, 30, "next_token", 3).into(),
    ]);
    assert!(rules(&r).contains(&"duplicate-token"), "{r:?}");
    assert_eq!(r.duplicates, 1);
}

#[test]
fn retire_and_next_token_records_round_trip() {
    let mut parts: Vec<String> = issue("w1.0", 1, 10, "next_token", 4).into();
    parts.extend(retire("w1.0", 2, 20, 21, "true"));
    for line in &parts {
        let r = history::Record::parse(line).unwrap();
        assert_eq!(history::Record::parse(&r.to_json().to_string()).unwrap(), r);
    }
}

/// A put of "one" (token 1, seq 1) acknowledged, then a delete of the same
/// key (seq 2) with `outcome` (`ok`, a failure code, or `""`: killed), then
/// the final read.
fn put_delete_read(outcome: &str, read: Option<(&str, u64)>) -> Report {
    let mut h = vec![
        META.to_owned(),
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"put","scope":"s","key":"a","token":1,"seq":1,"value":"one"}"#.to_owned(),
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"version":1}"#.to_owned(),
        r#"{"ev":"invoke","p":"w1.0","n":2,"ts":20,"op":"delete","scope":"s","key":"a","token":1,"seq":2}"#.to_owned(),
    ];
    match outcome {
        "" => h.push(r#"{"ev":"kill","p":"w1.0","ts":25}"#.to_owned()),
        "ok" => h.push(r#"{"ev":"ok","p":"w1.0","n":2,"ts":21,"version":0}"#.to_owned()),
        code => h.push(format!(
            r#"{{"ev":"fail","p":"w1.0","n":2,"ts":21,"code":"{code}"}}"#
        )),
    }
    h.push(
        r#"{"ev":"invoke","p":"final","n":1,"ts":99,"op":"get","scope":"s","key":"a"}"#.to_owned(),
    );
    h.push(final_read(read));
    let refs: Vec<&str> = h.iter().map(String::as_str).collect();
    run(&lines(&refs))
}

#[test]
fn a_deleted_key_reads_back_empty() {
    assert_eq!(put_delete_read("ok", None).violations, vec![]);
    assert_eq!(
        rules(&put_delete_read("ok", Some(("one", 1)))),
        ["lost-write"]
    );
    // A delete that may have happened allows either.
    for killed in ["", "BACKEND"] {
        assert_eq!(put_delete_read(killed, None).violations, vec![]);
        assert_eq!(put_delete_read(killed, Some(("one", 1))).violations, vec![]);
    }
    // One that was rejected does not.
    assert_eq!(rules(&put_delete_read("STALE_TOKEN", None)), ["lost-write"]);
    assert_eq!(
        put_delete_read("STALE_TOKEN", Some(("one", 1))).violations,
        vec![]
    );
}

/// Token 1 acknowledged (replicated), then the standby cut off: token 2
/// issued and its put acknowledged by the old primary only; the primary
/// crashes, the standby is promoted (the failover record, `lossy` as
/// given) and, without the step, hands out token 2 again.
fn across_a_failover(lossy: bool, reissued: u64, read: Option<(&str, u64)>) -> Report {
    let failover = format!(
        r#"{{"ev":"failover","from":15,"cut":18,"ts":40,"end":50,"lossy":{lossy},"step":false}}"#
    );
    let reissue = format!(r#"{{"ev":"ok","p":"w3.0","n":1,"ts":61,"token":{reissued}}}"#);
    run(&lines(&[
        META,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"token":1}"#,
        r#"{"ev":"invoke","p":"w1.0","n":2,"ts":12,"op":"put","scope":"s","key":"a","token":1,"seq":1,"value":"one"}"#,
        r#"{"ev":"ok","p":"w1.0","n":2,"ts":13,"version":1}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"acquire","scope":"s"}"#,
        r#"{"ev":"ok","p":"w2.0","n":1,"ts":21,"token":2}"#,
        r#"{"ev":"invoke","p":"w2.0","n":2,"ts":22,"op":"put","scope":"s","key":"a","token":2,"seq":1,"value":"two"}"#,
        r#"{"ev":"ok","p":"w2.0","n":2,"ts":23,"version":2}"#,
        &failover,
        r#"{"ev":"invoke","p":"w3.0","n":1,"ts":60,"op":"acquire","scope":"s"}"#,
        &reissue,
        r#"{"ev":"invoke","p":"final","n":1,"ts":99,"op":"get","scope":"s","key":"a"}"#,
        &final_read(read),
    ]))
}

#[test]
fn a_lossy_failover_excuses_lost_writes_but_not_reissued_tokens() {
    // With the step: the new primary's token is far above; "two" is gone,
    // which asynchronous replication allows.
    let r = across_a_failover(true, 1 << 40, Some(("one", 1)));
    assert_eq!(r.violations, vec![]);
    assert_eq!((r.failovers, r.lossy_writes, r.partition_tokens), (1, 1, 1));
    // Without the step: token 2 handed out twice, whatever the window says
    // (and not above the put accepted with 2: rule 8).
    let r = across_a_failover(true, 2, Some(("one", 1)));
    assert_eq!(rules(&r), ["duplicate-token", "issued-not-above-accepted"]);
    assert_eq!(r.duplicates, 1);
    // Token 2 again, or an older one, after token 2 was told: not increasing.
    assert_eq!(
        rules(&across_a_failover(true, 1, Some(("one", 1)))),
        [
            "duplicate-token",
            "issued-not-above-accepted",
            "token-not-increasing"
        ]
    );
    // Synchronous (not lossy): token 2 came back while the standby was
    // cut off, and its acknowledged write must survive.
    assert_eq!(
        rules(&across_a_failover(false, 1 << 40, Some(("one", 1)))),
        ["lost-write", "token-without-standby"]
    );
    assert_eq!(
        rules(&across_a_failover(false, 1 << 40, Some(("two", 2)))),
        ["token-without-standby"]
    );
}

#[test]
fn a_synchronous_failover_returns_no_token_while_the_standby_is_cut_off() {
    // The issuance invoked after the cut fails (BACKEND, outcome unknown);
    // one invoked before it may complete after it (the standby had it).
    let r = run(&lines(&[
        META,
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"next_token","scope":"s"}"#,
        r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"next_token","scope":"s"}"#,
        r#"{"ev":"ok","p":"w1.0","n":1,"ts":21,"token":1}"#,
        r#"{"ev":"fail","p":"w2.0","n":1,"ts":39,"code":"BACKEND"}"#,
        r#"{"ev":"failover","from":5,"cut":15,"ts":40,"end":50,"lossy":false,"step":false}"#,
        r#"{"ev":"invoke","p":"w2.0","n":2,"ts":60,"op":"next_token","scope":"s"}"#,
        r#"{"ev":"ok","p":"w2.0","n":2,"ts":61,"token":2}"#,
    ]));
    assert_eq!(r.violations, vec![]);
    assert_eq!(
        (r.failovers, r.partition_tokens, r.indeterminate),
        (1, 0, 1)
    );
}

// ----- jumps and outside tokens (rule 8) -----

/// `op` ("advance_counter" or "claim") on "x" with token `v`, invoked at
/// `ts`, completed at `ts + 1` with `outcome`: `ok` (an advance returns
/// `max(v, counter)` as `counter`), a failure code, or `""` (no outcome).
fn jump(p: &str, n: u64, ts: u64, op: &str, v: u64, outcome: &str, counter: u64) -> Vec<String> {
    let outside = if op == "advance_counter" {
        ""
    } else {
        r#","outside":true"#
    };
    let mut lines = vec![format!(
        r#"{{"ev":"invoke","p":"{p}","n":{n},"ts":{ts},"op":"{op}","scope":"x","token":{v}{outside}}}"#
    )];
    let done = ts + 1;
    match outcome {
        "" => {}
        "ok" if op == "advance_counter" => lines.push(format!(
            r#"{{"ev":"ok","p":"{p}","n":{n},"ts":{done},"token":{counter}}}"#
        )),
        "ok" => lines.push(format!(r#"{{"ev":"ok","p":"{p}","n":{n},"ts":{done}}}"#)),
        code => lines.push(format!(
            r#"{{"ev":"fail","p":"{p}","n":{n},"ts":{done},"code":"{code}"}}"#
        )),
    }
    lines
}

#[test]
fn a_token_issued_after_a_jump_is_above_it() {
    let after = |op: &str, issued: u64, at: u64| {
        history(vec![
            issue("w1.0", 1, 10, "next_token", 1).into(),
            jump("w1.0", 2, 20, op, 1000, "ok", 1000),
            issue("w2.0", 1, at, "next_token", issued).into(),
        ])
    };
    for op in ["advance_counter", "claim"] {
        let r = after(op, 1001, 30);
        assert_eq!(r.violations, vec![], "{op}");
        assert_eq!(rules(&after(op, 1000, 30)), ["issued-not-above-accepted"]);
        assert_eq!(rules(&after(op, 2, 30)), ["issued-not-above-accepted"]);
        // Invoked before the jump returned: either order is possible.
        assert_eq!(after(op, 2, 21).violations, vec![], "{op}");
    }
    let r = after("advance_counter", 1001, 30);
    assert_eq!((r.jumps_accepted, r.outside_accepted), (1, 0));
    let r = after("claim", 1001, 30);
    assert_eq!((r.jumps_accepted, r.outside_accepted), (0, 1));
    // An advance that returned a counter above its floor: above the counter.
    let r = history(vec![
        jump("w1.0", 1, 10, "advance_counter", 3, "ok", 50),
        issue("w2.0", 1, 20, "acquire", 50).into(),
    ]);
    assert_eq!(rules(&r), ["issued-not-above-accepted"]);
}

#[test]
fn a_jump_over_the_limit_must_be_refused() {
    let over = 5 + OVER_LIMIT + 1;
    let jump_after_5 = |op: &str, v: u64, outcome: &str, failover: Option<(u64, u64)>| {
        let mut parts = vec![issue("w1.0", 1, 10, "next_token", 5).to_vec()];
        if let Some((ts, end)) = failover {
            parts.push(vec![format!(
                r#"{{"ev":"failover","from":1,"cut":2,"ts":{ts},"end":{end},"lossy":true,"step":false}}"#
            )]);
        }
        parts.push(jump("w2.0", 1, 30, op, v, outcome, v));
        history(parts)
    };
    for op in ["advance_counter", "claim"] {
        let r = jump_after_5(op, over, "ok", None);
        assert_eq!(rules(&r), ["jump-over-limit-accepted"], "{op}");
        let r = jump_after_5(op, over, "INVALID_ARGUMENT", None);
        assert_eq!(r.violations, vec![], "{op}");
        assert_eq!((r.jumps_refused, r.jumps_over_limit), (1, 1));
        // Within 2^48 + 2^40 of a token issued: maybe inside the limit.
        assert_eq!(jump_after_5(op, over - 1, "ok", None).violations, vec![]);
        // A failover between the token and the jump: its steps moved the
        // limit, and the token no longer bounds it.
        assert_eq!(
            jump_after_5(op, over, "ok", Some((15, 25))).violations,
            vec![]
        );
        // One before the token was issued leaves it a bound.
        assert_eq!(
            rules(&jump_after_5(op, over, "ok", Some((1, 2)))),
            ["jump-over-limit-accepted"]
        );
    }
    // A store whose jumps are unbounded accepts it.
    let meta = r#"{"ev":"meta","url":"sqlite:x.db?jumps=unbounded","eager":true,"ttl_ms":1}"#;
    let mut all = vec![meta.to_owned()];
    all.extend(issue("w1.0", 1, 10, "next_token", 5));
    all.extend(jump("w2.0", 1, 30, "advance_counter", over, "ok", over));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    assert_eq!(run(&lines(&refs)).violations, vec![]);
}

#[test]
fn a_refused_jump_changes_nothing() {
    let over = 5 + OVER_LIMIT + 1;
    // The jump refused, then what the store tells: a token, a fence.
    let refused_then = |seen: Vec<String>, other: Vec<String>| {
        history(vec![
            issue("w1.0", 1, 10, "next_token", 5).to_vec(),
            jump(
                "w2.0",
                1,
                20,
                "advance_counter",
                over,
                "INVALID_ARGUMENT",
                0,
            ),
            other,
            seen,
        ])
    };
    let next = |t: u64| issue("w3.0", 1, 40, "next_token", t).to_vec();
    assert_eq!(refused_then(next(6), vec![]).violations, vec![]);
    assert_eq!(
        rules(&refused_then(next(over + 1), vec![])),
        ["refused-jump-took-effect"]
    );
    let stale = vec![
        r#"{"ev":"invoke","p":"w3.0","n":1,"ts":40,"op":"claim","scope":"x","token":6}"#.to_owned(),
        format!(
            r#"{{"ev":"fail","p":"w3.0","n":1,"ts":41,"code":"STALE_TOKEN","current":{over}}}"#
        ),
    ];
    assert_eq!(
        rules(&refused_then(stale, vec![])),
        ["refused-jump-took-effect"]
    );
    // Explained by another jump that may have taken effect (its process
    // killed mid-call; whether it should have been refused is not known).
    let killed = jump("w4.0", 1, 25, "advance_counter", over, "", 0);
    assert_eq!(refused_then(next(over + 1), killed).violations, vec![]);
    // After a failover's crash the step may move everything anywhere.
    let failover = vec![
        r#"{"ev":"failover","from":30,"cut":31,"ts":32,"end":35,"lossy":true,"step":false}"#
            .to_owned(),
    ];
    assert_eq!(refused_then(next(over + 1), failover).violations, vec![]);
}

#[test]
fn nothing_from_before_a_failover_is_accepted_after_it() {
    let across = |v: u64, invoke: u64, outcome: &str| {
        history(vec![
            jump("w1.0", 1, 10, "claim", 900, "ok", 0),
            vec![
                r#"{"ev":"failover","from":5,"cut":12,"ts":15,"end":30,"lossy":true,"step":false}"#
                    .to_owned(),
            ],
            jump("w2.0", 1, invoke, "claim", v, outcome, 0),
        ])
    };
    assert_eq!(across(900, 40, "STALE_TOKEN").violations, vec![]);
    assert_eq!(rules(&across(900, 40, "ok")), ["accepted-across-failover"]);
    // An advance_counter before the crash counts too (w2's claim is below
    // what w1 was told, so rule 3 does not see it).
    let r = history(vec![
        jump("w1.0", 1, 10, "advance_counter", 900, "ok", 900),
        vec![
            r#"{"ev":"failover","from":5,"cut":12,"ts":15,"end":30,"lossy":true,"step":false}"#
                .to_owned(),
        ],
        jump("w2.0", 1, 40, "claim", 800, "ok", 0),
    ]);
    assert_eq!(rules(&r), ["accepted-across-failover"]);
    // Above everything known before the crash: nothing to say.
    assert_eq!(across(901, 40, "ok").violations, vec![]);
    // Invoked before the new primary opened: not known to be after it.
    assert_eq!(across(900, 20, "ok").violations, vec![]);
}

#[test]
fn a_later_life_starts_above_an_advanced_counter() {
    // The counter advanced to 50 is the floor: a claim with 45 in the next
    // life is below it.
    let r = history(vec![
        issue("w1.0", 1, 10, "next_token", 1).into(),
        jump("w1.0", 2, 20, "advance_counter", 50, "ok", 50),
        retire("w2.0", 1, 30, 31, "true"),
        jump("w3.0", 1, 40, "claim", 45, "ok", 0),
    ]);
    assert_eq!(rules(&r), ["below-earlier-life"]);
}

#[test]
fn jump_records_round_trip() {
    for line in [
        r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"advance_counter","scope":"x","token":7}"#,
        r#"{"ev":"invoke","p":"w1.0","n":2,"ts":12,"op":"put","scope":"x","key":"a","token":9,"seq":1,"value":"v","outside":true}"#,
    ] {
        let r = history::Record::parse(line).unwrap();
        assert_eq!(
            r.to_json(),
            serde_json::from_str::<serde_json::Value>(line).unwrap()
        );
    }
}
