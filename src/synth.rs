//! `synth`: realistic recorded traffic for benchmarks and demos,
//! deterministic for a given seed.
//!
//! The mix (documented in docs/datasets.md):
//! - runs of 1 to 12 turns; scope `{tenant (8), channel (web/slack/email)}`;
//! - language: en 60%, es 12%, de 8%, fr 8%, pt 5%, ja 4%, it 3%;
//! - drafts: 35% acknowledgements in the turn's language (Japanese and
//!   Italian ones are not recognised by the built-in patterns), 65% answers
//!   of 150 to 2,000 characters, often with numbers, amounts and names;
//! - tool calls on 25% of turns: search_docs 60%, get_order 15%,
//!   update_order 15%, send_email 10%;
//! - intent verdict on 70%: knowledge 55%, action 30%, ambiguous 15%;
//! - confidence: recorded on 60% (40% of them cold 0.5), an activation log
//!   on 20%, neither on 20%; sensitive hit `pii` on 3%, fabrication
//!   findings on 2%;
//! - a critic event wherever the legacy gate fired in production: verdict
//!   approve 93%, revise 5%, refuse 2% (revise 1% on acks), 2,500 to 5,000
//!   tokens in, 20 to 400 out, 1.2 to 4.5 s, model `claude-opus`.
//!
//! Lines average about 1 KB.
//!
//! The multilingual mix ([`Mix::Multilingual`], `synth --mix
//! multilingual`) changes two things, so that about half the drafts are
//! not ASCII: languages are en 35%, es 10%, de 7%, fr 7%, pt 4%, ja 7%,
//! zh 6%, ru 6%, ar 5%, ko 4%, hi 3%, it 3%, tr 3% (acks in ja, zh, ru, ar,
//! ko, hi, it and tr match no built-in pattern); and 70% of answers open
//! with an accented name (`Zoë Ångström, ...`).

use std::io::Write;

use serde_json::{json, Value};

/// SplitMix64: small, fast, and stable across platforms.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn f(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.f() < p
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f()
    }
}

const LANGS: [(&str, f64); 7] = [
    ("en", 0.60),
    ("es", 0.12),
    ("de", 0.08),
    ("fr", 0.08),
    ("pt", 0.05),
    ("ja", 0.04),
    ("it", 0.03),
];

/// Which traffic [`Synth`] writes (declared with `--mix`'s names).
pub use crate::options::Mix;

/// The languages of a mix, with their weights.
fn langs(mix: Mix) -> &'static [(&'static str, f64)] {
    match mix {
        Mix::Default => &LANGS,
        Mix::Multilingual => &LANGS_MULTILINGUAL,
    }
}

const LANGS_MULTILINGUAL: [(&str, f64); 13] = [
    ("en", 0.35),
    ("es", 0.10),
    ("de", 0.07),
    ("fr", 0.07),
    ("pt", 0.04),
    ("ja", 0.07),
    ("zh", 0.06),
    ("ru", 0.06),
    ("ar", 0.05),
    ("ko", 0.04),
    ("hi", 0.03),
    ("it", 0.03),
    ("tr", 0.03),
];

/// Names with letters outside ASCII, for answers of the multilingual mix.
const ACCENTED: [&str; 8] = [
    "Zoë Ångström",
    "José Núñez",
    "Björn Müller",
    "Łucja Wąsik",
    "Ólafur Þórsson",
    "Renée Lefèvre",
    "Çağla Öztürk",
    "Dvořák Šťastný",
];

fn acks(lang: &str) -> &'static [&'static str] {
    match lang {
        "zh" => &["好的，谢谢！", "明白了。", "收到。"],
        "ru" => &["Спасибо, понял.", "Хорошо.", "Готово!"],
        "ar" => &["شكرا جزيلا!", "حسنا، تم.", "مفهوم."],
        "ko" => &["알겠습니다.", "감사합니다!", "네, 좋아요."],
        "hi" => &["ठीक है, धन्यवाद।", "समझ गया।"],
        "tr" => &["Tamam, teşekkürler.", "Anlaşıldı.", "Oldu!"],
        "es" => &[
            "Entendido, gracias.",
            "Vale, de acuerdo.",
            "¡Perfecto!",
            "Listo.",
            "Claro, sin problema.",
        ],
        "de" => &[
            "Alles klar, danke!",
            "Verstanden.",
            "Erledigt.",
            "Gern geschehen.",
            "In Ordnung",
        ],
        "fr" => &[
            "D'accord, merci.",
            "Parfait !",
            "C'est fait.",
            "Bien sûr.",
            "Entendu.",
        ],
        "pt" => &[
            "Perfeito, obrigado!",
            "Certo.",
            "Feito.",
            "Com certeza.",
            "Obrigada!",
        ],
        "ja" => &["承知しました。", "了解です。", "ありがとうございます。"],
        "it" => &["Grazie mille!", "Va bene.", "Perfetto, grazie.", "Certo!"],
        _ => &[
            "Got it, thanks!",
            "Sounds good.",
            "ok",
            "Thank you so much for your patience.",
            "Noted; on it.",
            "Sure thing, I'll handle it.",
            "You're welcome!",
            "Great, will do.",
            "Understood.",
            "Perfect, thanks.",
        ],
    }
}

const SENTENCES: [&str; 12] = [
    "I looked through the documentation for this and there are a few ways to approach it, each with different tradeoffs around latency and cost.",
    "The first option keeps everything in the current workflow and only changes how the results are exported at the end of the day.",
    "If you would rather avoid the extra round trip, the second option batches the requests and sends them together once per hour.",
    "Your order {n} shipped on {d} and the tracking page shows it arriving within {k} business days.",
    "Revenue for the quarter came in at ${m}M, which is {k}% above the previous quarter.",
    "{a} from the {c} office confirmed the migration window; the snapshot is about {n} GB.",
    "The invoice {h} was issued on {d} for ${m}K and is due in {k} days.",
    "Let me know if you want me to walk through any of these steps in more detail or adjust the plan.",
    "Based on what you described, the simplest path is to update the settings page and re-run the sync.",
    "There is no record of a previous request like this, so this would be the first change of its kind on the account.",
    "the report covers every team that submitted numbers before the deadline, and the late ones will follow in the next cycle.",
    "We can also schedule a follow-up review once the changes have been live for a week or two.",
];

const PEOPLE: [&str; 6] = [
    "Sarah Connor",
    "Miguel Ortega",
    "Anna Bell",
    "Kenji Sato",
    "Priya Nair",
    "Lukas Weber",
];
const CITIES: [&str; 5] = ["Berlin", "Lisbon", "Austin", "Osaka", "Madrid"];

fn answer(r: &mut Rng) -> String {
    let target = 150 + r.below(1850);
    let mut s = String::new();
    while s.len() < target {
        let t = *r.pick(&SENTENCES);
        let sent = t
            .replace("{n}", &(1000 + r.below(90000)).to_string())
            .replace("{d}", &format!("March {}", 1 + r.below(28)))
            .replace("{k}", &(1 + r.below(30)).to_string())
            .replace("{m}", &format!("{:.1}", r.range(0.5, 9.9)))
            .replace("{a}", r.pick::<&str>(&PEOPLE))
            .replace("{c}", r.pick::<&str>(&CITIES))
            .replace("{h}", &format!("{:08x}", r.next_u64() as u32));
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&sent);
    }
    s
}

fn pick_weighted<'a>(r: &mut Rng, xs: &'a [(&'a str, f64)]) -> &'a str {
    let mut x = r.f();
    for (v, w) in xs {
        if x < *w {
            return v;
        }
        x -= w;
    }
    xs.last().unwrap().0
}

/// The stream of synthetic turns, one per [`Synth::next_turn`]; runs of 1-12
/// turns are cut as the stream goes.
pub struct Synth {
    mix: Mix,
    rng: Rng,
    seed: u64,
    run: u64,
    turn_in_run: u64,
    run_len: u64,
    tenant: usize,
    channel: &'static str,
    lang: &'static str,
}

impl Synth {
    pub fn new(seed: u64) -> Synth {
        Synth::with_mix(seed, Mix::Default)
    }

    pub fn with_mix(seed: u64, mix: Mix) -> Synth {
        Synth {
            mix,
            rng: Rng::new(seed),
            seed,
            run: 0,
            turn_in_run: 0,
            run_len: 0,
            tenant: 0,
            channel: "web",
            lang: "en",
        }
    }

    pub fn next_turn(&mut self) -> Value {
        self.start_run_when_done();
        let r = &mut self.rng;
        let is_ack = r.chance(0.35);
        let draft = if is_ack {
            r.pick(acks(self.lang)).to_string()
        } else if self.mix == Mix::Multilingual && r.chance(0.7) {
            format!("{}, {}", r.pick(&ACCENTED), answer(r))
        } else {
            answer(r)
        };
        let mut t = json!({
            "run_id": format!("syn-{}-{:07}", self.seed, self.run),
            "turn": self.turn_in_run,
            "ts": format!("2026-11-{:02}T{:02}:{:02}:{:02}Z", 1 + r.below(28), r.below(24), r.below(60), r.below(60)),
            "scope": {"tenant": format!("tenant-{}", self.tenant), "channel": self.channel},
            "language": self.lang,
            "draft": draft,
        });
        self.turn_in_run += 1;
        add_tool_calls(r, &mut t);
        add_intent(r, &mut t);
        let confidence = add_confidence(r, &mut t);
        let sensitive = r.chance(0.03);
        t["sensitive_hit"] = if sensitive { json!("pii") } else { Value::Null };
        if r.chance(0.02) {
            t["fabrication_findings"] = json!([{"kind": "uuid"}]);
        }
        // Production ran the legacy gate: the critic ran where it fired.
        if confidence < 0.6 || sensitive {
            t["critic"] = critic(r, is_ack);
        }
        t
    }

    /// A new run (tenant, channel, language, length) once the last ends.
    fn start_run_when_done(&mut self) {
        if self.turn_in_run < self.run_len {
            return;
        }
        let r = &mut self.rng;
        self.run += 1;
        self.turn_in_run = 0;
        self.run_len = 1 + r.below(12) as u64;
        self.tenant = r.below(8);
        self.channel = *r.pick(&["web", "slack", "email"]);
        self.lang = pick_weighted(r, langs(self.mix));
    }
}

fn add_tool_calls(r: &mut Rng, t: &mut Value) {
    if r.chance(0.25) {
        let name = pick_weighted(
            r,
            &[
                ("search_docs", 0.6),
                ("get_order", 0.15),
                ("update_order", 0.15),
                ("send_email", 0.1),
            ],
        );
        t["tool_calls_this_turn"] = json!([{"name": name, "args": {"q": "status"}}]);
    } else {
        t["tool_calls_this_turn"] = json!([]);
    }
}

fn add_intent(r: &mut Rng, t: &mut Value) {
    if r.chance(0.7) {
        let label = pick_weighted(
            r,
            &[("knowledge", 0.55), ("action", 0.30), ("ambiguous", 0.15)],
        );
        t["intent_verdict"] =
            json!({"label": label, "confidence": (r.range(0.5, 0.99) * 100.0).round() / 100.0});
    }
}

/// A recorded confidence (60%), an activation log (20%) or neither (cold
/// start); returns the confidence the gate will see.
fn add_confidence(r: &mut Rng, t: &mut Value) -> f64 {
    let mode = r.f();
    if mode < 0.6 {
        let c = if r.chance(0.4) {
            0.5
        } else {
            (r.range(0.3, 0.97) * 1000.0).round() / 1000.0
        };
        t["confidence"] = json!(c);
        c
    } else if mode < 0.8 {
        let n = 1 + r.below(3);
        let nodes: Vec<Value> =
            (0..n).map(|k| json!({"name": format!("n{k}"), "score": (r.range(0.2, 1.0) * 100.0).round() / 100.0, "tags": []})).collect();
        let paths: Vec<Value> = (0..r.below(4)).map(|_| json!(["n0", "n1"])).collect();
        let edges: Vec<Value> = (0..r.below(3))
            .map(|_| json!({"weight": (r.range(0.5, 6.0) * 10.0).round() / 10.0}))
            .collect();
        let log =
            json!({"activated_nodes": nodes, "inference_paths": paths, "traversed_edges": edges});
        let c = crate::read::activation::ActivationLog::from_value(&log)
            .unwrap()
            .unwrap()
            .confidence;
        t["activation_log"] = log;
        c
    } else {
        0.5
    }
}

/// The event of a critic that ran: a verdict (acks are rarely revised),
/// latency, tokens and model.
fn critic(r: &mut Rng, is_ack: bool) -> Value {
    let x = r.f();
    let (revise, refuse) = if is_ack { (0.01, 0.0) } else { (0.05, 0.02) };
    let verdict = if x < refuse {
        "refuse"
    } else if x < refuse + revise {
        "revise"
    } else {
        "approve"
    };
    let mut c = json!({
        "verdict": verdict,
        "reflection_latency_ms": (r.range(1200.0, 4500.0) * 10.0).round() / 10.0,
        "reflection_tokens_in": 2500 + r.below(2500),
        "reflection_tokens_out": 20 + r.below(380),
        "model": "claude-opus",
    });
    if verdict == "revise" {
        c["revised_draft"] =
            json!("I need to correct that: the figures above are not confirmed yet.");
    } else if verdict == "refuse" {
        c["refusal_message"] = json!("This reply shares details the user is not allowed to see.");
    }
    c
}

/// Write `turns` lines to `out`.
pub fn write(turns: u64, seed: u64, out: &mut dyn Write) -> std::io::Result<u64> {
    write_mix(turns, seed, Mix::Default, out)
}

/// Write `turns` lines of `mix` to `out`.
pub fn write_mix(turns: u64, seed: u64, mix: Mix, out: &mut dyn Write) -> std::io::Result<u64> {
    let mut s = Synth::with_mix(seed, mix);
    let mut bytes = 0;
    let mut line = String::new();
    for _ in 0..turns {
        line.clear();
        line.push_str(&s.next_turn().to_string());
        line.push('\n');
        out.write_all(line.as_bytes())?;
        bytes += line.len() as u64;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multilingual_mix_is_about_half_non_ascii() {
        let mut a = Vec::new();
        write_mix(2000, 3, Mix::Multilingual, &mut a).unwrap();
        let text = String::from_utf8(a).unwrap();
        let drafts: Vec<String> = text
            .lines()
            .map(|l| crate::read::turn::Turn::parse(l).unwrap().draft.to_string())
            .collect();
        let non_ascii = drafts.iter().filter(|d| !d.is_ascii()).count();
        let share = non_ascii as f64 / drafts.len() as f64;
        assert!((0.4..0.65).contains(&share), "non-ASCII drafts: {share}");
    }

    #[test]
    fn is_deterministic_and_valid() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        write(200, 7, &mut a).unwrap();
        write(200, 7, &mut b).unwrap();
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        for l in text.lines() {
            crate::read::turn::Turn::parse(l).unwrap();
        }
        let avg = text.len() / 200;
        assert!((500..2000).contains(&avg), "average line {avg} bytes");
    }
}
