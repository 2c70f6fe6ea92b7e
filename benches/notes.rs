//! The notes benchmark: the SQLite adapter of `ports::Notes` holding 10,000 notes of a
//! family (household titles, contents of 10 to 70 words from a vocabulary of about 330, a
//! fifth of them private), then 1,000 searches of varied words (one to three, some cut
//! short as a member types them, some with quotes, `*`, `-` or `:` around them) by the
//! family's members, one at a time.
//!
//! Run with `cargo bench --bench notes`. Sizes: `HEARTH_BENCH_NOTES` (default 10000),
//! `HEARTH_BENCH_SEARCHES` (default 1000); `HEARTH_BENCH_SEED` picks other words. Prints how
//! long the notes took to write, and each search's latency as p50/p99/max beside the target.

#[path = "../tests/support/measure.rs"]
mod measure;

use std::time::{Duration, Instant};

use hearth::ids::MemberId;
use hearth::ports::{NoteVisibility, NoteWrite};
use measure::{env_number, percentile, verdict};

const TARGET_P99_MS: f64 = 10.0;
/// Notes written at once, so the writer commits them together as concurrent turns would.
const WRITE_BATCH: usize = 200;
const MEMBERS: [&str; 4] = ["alice", "bob", "carol", "dave"];

const TOPICS: &[&str] = &[
    "Wifi",
    "Garden",
    "Recipe",
    "School",
    "Doctor",
    "Car",
    "Birthday",
    "Holiday",
    "Insurance",
    "Plumber",
    "Books",
    "Gift ideas",
    "Packing list",
    "Passwords",
    "Bank",
    "Dentist",
    "Football",
    "Piano lessons",
    "Grandma",
    "Neighbours",
    "Heating",
    "Bicycle",
    "Movies",
    "Shopping",
];
const QUALIFIERS: &[&str] = &[
    "plan",
    "notes",
    "ideas",
    "numbers",
    "schedule",
    "contacts",
    "checklist",
    "details",
    "log",
    "reminders",
    "questions",
    "budget",
];
const WORDS: &[&str] = &[
    "password",
    "router",
    "upstairs",
    "basement",
    "roses",
    "tomatoes",
    "compost",
    "watering",
    "pancakes",
    "flour",
    "eggs",
    "butter",
    "sugar",
    "oven",
    "teacher",
    "homework",
    "pickup",
    "uniform",
    "appointment",
    "prescription",
    "allergy",
    "vaccination",
    "tyres",
    "service",
    "garage",
    "mileage",
    "cake",
    "candles",
    "invitation",
    "presents",
    "beach",
    "passport",
    "tickets",
    "hotel",
    "sunscreen",
    "policy",
    "renewal",
    "premium",
    "claim",
    "leak",
    "boiler",
    "radiator",
    "thermostat",
    "library",
    "novel",
    "chapter",
    "author",
    "lego",
    "puzzle",
    "scarf",
    "headphones",
    "suitcase",
    "charger",
    "toothbrush",
    "account",
    "transfer",
    "savings",
    "mortgage",
    "checkup",
    "braces",
    "training",
    "match",
    "boots",
    "coach",
    "scales",
    "practice",
    "recital",
    "phone",
    "address",
    "visit",
    "fence",
    "hedge",
    "party",
    "chain",
    "helmet",
    "lights",
    "cinema",
    "popcorn",
    "milk",
    "bread",
    "cheese",
    "apples",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "morning",
    "evening",
    "remember",
    "call",
    "bring",
    "before",
    "after",
    "weekly",
    "monthly",
    "code",
    "number",
    "key",
    "spare",
    "drawer",
    "kitchen",
    "shed",
    "attic",
    "receipt",
    "warranty",
    "manual",
    "bedroom",
    "bathroom",
    "window",
    "door",
    "curtains",
    "carpet",
    "paint",
    "ladder",
    "drill",
    "screws",
    "battery",
    "fuse",
    "socket",
    "washing",
    "dryer",
    "fridge",
    "freezer",
    "kettle",
    "toaster",
    "vacuum",
    "laundry",
    "ironing",
    "blanket",
    "pillow",
    "towels",
    "soap",
    "shampoo",
    "medicine",
    "plaster",
    "thermometer",
    "vitamins",
    "pharmacy",
    "hospital",
    "nurse",
    "surgery",
    "referral",
    "results",
    "bloods",
    "glasses",
    "optician",
    "contact",
    "lenses",
    "hearing",
    "vet",
    "dog",
    "cat",
    "rabbit",
    "food",
    "walk",
    "lead",
    "collar",
    "flea",
    "worming",
    "kennel",
    "sitter",
    "babysitter",
    "nanny",
    "club",
    "swimming",
    "goggles",
    "costume",
    "ballet",
    "shoes",
    "trainers",
    "jacket",
    "coat",
    "gloves",
    "hat",
    "umbrella",
    "wellies",
    "raincoat",
    "jumper",
    "trousers",
    "shorts",
    "socks",
    "pyjamas",
    "train",
    "bus",
    "airport",
    "flight",
    "gate",
    "luggage",
    "visa",
    "currency",
    "camping",
    "tent",
    "sleeping",
    "bag",
    "stove",
    "torch",
    "map",
    "route",
    "parking",
    "permit",
    "fine",
    "council",
    "tax",
    "bin",
    "recycling",
    "collection",
    "water",
    "meter",
    "electricity",
    "gas",
    "broadband",
    "contract",
    "provider",
    "tariff",
    "bill",
    "direct",
    "debit",
    "pension",
    "payslip",
    "invoice",
    "refund",
    "return",
    "parcel",
    "delivery",
    "courier",
    "postcode",
    "landlord",
    "rent",
    "deposit",
    "lease",
    "tenancy",
    "builder",
    "quote",
    "estimate",
    "electrician",
    "carpenter",
    "roofer",
    "gutter",
    "chimney",
    "drain",
    "septic",
    "pond",
    "greenhouse",
    "seeds",
    "bulbs",
    "pruning",
    "mower",
    "strimmer",
    "hose",
    "sprinkler",
    "bird",
    "feeder",
    "squirrel",
    "mole",
    "slugs",
    "pellets",
    "harvest",
    "courgettes",
    "beans",
    "potatoes",
    "carrots",
    "onions",
    "garlic",
    "herbs",
    "basil",
    "mint",
    "rosemary",
    "thyme",
];

/// A small, seeded generator: the same seed writes the same notes and searches.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    fn sentence(&mut self, words: usize) -> String {
        let mut text = String::new();
        for n in 0..words {
            let word = self.pick(WORDS);
            text.push_str(word);
            text.push_str(if n % 9 == 8 { ". " } else { " " });
        }
        text.trim_end().to_string()
    }

    /// What a member might type: one to three words, sometimes the last one half typed,
    /// sometimes with search-syntax characters around them.
    fn query(&mut self) -> String {
        let count = 1 + self.below(3);
        let mut words: Vec<String> = (0..count).map(|_| self.pick(WORDS).to_string()).collect();
        if self.below(4) == 0
            && let Some(last) = words.last_mut()
        {
            let cut = (last.chars().count() / 2).max(3);
            *last = last.chars().take(cut).collect();
        }
        if self.below(10) == 0 {
            let dressing = ["\"", "*", "-", "title:", "NEAR("];
            let dressed = format!("{}{}", self.pick(&dressing), words[0]);
            words[0] = dressed;
        }
        if self.below(3) == 0 {
            words.push(self.pick(TOPICS).to_lowercase());
        }
        words.join(" ")
    }
}

fn member(id: &str) -> MemberId {
    id.parse().expect("a member id")
}

fn main() {
    let notes = env_number("HEARTH_BENCH_NOTES", 10_000);
    let searches = env_number("HEARTH_BENCH_SEARCHES", 1_000);
    let seed = env_number("HEARTH_BENCH_SEED", 20_240_601) as u64;
    println!("notes benchmark: {notes} notes, {searches} searches, seed {seed}");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(notes, searches, seed));
}

async fn run(notes: usize, searches: usize, seed: u64) {
    let folder = tempfile::tempdir().expect("temporary folder");
    let url = format!("sqlite://{}", folder.path().join("notes.db").display());
    let stores = hearth::storage::open(&url, 4).await.expect("database");
    let mut words = Words(seed.max(1));

    let started = Instant::now();
    let mut written = 0;
    while written < notes {
        let batch: Vec<NoteWrite> = (written..notes.min(written + WRITE_BATCH))
            .map(|n| NoteWrite {
                title: format!("{} {} {n}", words.pick(TOPICS), words.pick(QUALIFIERS)),
                content: {
                    let length = 10 + words.below(60);
                    words.sentence(length)
                },
                visibility: if words.below(5) == 0 {
                    Some(NoteVisibility::Private)
                } else {
                    Some(NoteVisibility::Family)
                },
                writer: member(MEMBERS[n % MEMBERS.len()]),
                at_ms: 1_700_000_000_000 + n as i64,
            })
            .collect();
        let saves = batch.iter().map(|write| stores.notes.save(write));
        for saved in futures::future::join_all(saves).await {
            saved.expect("note saved");
        }
        written += batch.len();
    }
    let writing = started.elapsed();
    println!(
        "wrote {notes} notes in {:.1} s ({:.0} notes/s)",
        writing.as_secs_f64(),
        notes as f64 / writing.as_secs_f64()
    );

    let mut latencies: Vec<Duration> = Vec::with_capacity(searches);
    let mut hits = 0usize;
    for n in 0..searches {
        let query = words.query();
        let reader = member(MEMBERS[n % MEMBERS.len()]);
        let asked = Instant::now();
        let found = stores
            .notes
            .search(&reader, &query, 10)
            .await
            .unwrap_or_else(|error| panic!("search {query:?}: {error}"));
        latencies.push(asked.elapsed());
        hits += usize::from(!found.is_empty());
    }
    latencies.sort_unstable();
    let p99 = percentile(&latencies, 0.99);
    println!("searches finding something: {hits} of {searches}");
    println!(
        "search latency: p50 {:.2} ms, p99 {p99:.2} ms, max {:.2} ms (target p99 < {TARGET_P99_MS} ms: {})",
        percentile(&latencies, 0.5),
        percentile(&latencies, 1.0),
        verdict(p99 < TARGET_P99_MS)
    );
    stores.close().await;
}
