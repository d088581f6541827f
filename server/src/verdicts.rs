//! Verdicts already given, by scenario hash and design. A check is a pure function of the two
//! (the simulator has no clock and no randomness, and the limits are the server's), so a design
//! checked again, as students and graders often do, is answered from here without running
//! the simulator.
//!
//! Two generations of entries bound the memory: new verdicts go into the current one; when it
//! holds half the budget it becomes the previous one, and the one before is dropped. A verdict
//! found in the previous generation moves back into the current one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Bytes;
use serde_json::value::RawValue;
use shared::verdict_table::Summary;
use shared::Verdict;

/// A verdict's JSON, as the check route answers it, with the few fields the server reads
/// itself.
#[derive(Debug)]
pub struct Checked {
    pub outline: Outline,
    pub json: Bytes,
    /// The verdict as an attempt stores it ([`Checked::stored`]), made on first use.
    stored: OnceLock<Box<RawValue>>,
    /// That text compressed, as the database keeps it ([`Checked::deflated`]).
    deflated: OnceLock<Arc<[u8]>>,
}

/// What the server reads of a verdict (metrics, an attempt's score); the rest it passes on as
/// JSON, so a verdict from a scenario's table is never read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outline {
    pub scenario: String,
    pub scenario_hash: String,
    pub summary: Summary,
}

impl Outline {
    /// The outline of a verdict from `scenario`'s table (for the version `hash`).
    pub fn from_table(scenario: &str, hash: &str, summary: Summary) -> Outline {
        Outline {
            scenario: scenario.to_string(),
            scenario_hash: hash.to_string(),
            summary,
        }
    }

    fn of(verdict: &Verdict) -> Outline {
        Outline::from_table(
            &verdict.scenario,
            &verdict.scenario_hash,
            Summary::of(verdict),
        )
    }
}

impl Checked {
    /// A verdict the search gave, written as JSON.
    pub fn new(verdict: Verdict) -> Result<Checked, serde_json::Error> {
        let json = Bytes::from(serde_json::to_vec(&verdict)?);
        Ok(Checked::of_json(Outline::of(&verdict), json))
    }

    /// A verdict already written as JSON (from the scenario's table), with its outline.
    pub fn of_json(outline: Outline, json: Bytes) -> Checked {
        Checked {
            outline,
            json,
            stored: OnceLock::new(),
            deflated: OnceLock::new(),
        }
    }

    /// The verdict as an attempt stores it and a submission answers it: its JSON as a JSON
    /// value writes it, every object's keys in order, so that a submission's answer, the
    /// attempt and the answer's replay (read back from the attempt) are the same text. Made
    /// once per verdict kept, however many submissions send the same design.
    pub fn stored(&self) -> Result<&RawValue, serde_json::Error> {
        if let Some(text) = self.stored.get() {
            return Ok(text);
        }
        let value: serde_json::Value = serde_json::from_slice(&self.json)?;
        let text = serde_json::value::to_raw_value(&value)?;
        Ok(self.stored.get_or_init(|| text))
    }

    /// [`Checked::stored`] compressed as an attempt's verdict is kept in the database
    /// (`crate::store::stored_verdict`). Made once per verdict kept, as the text is.
    pub fn deflated(&self) -> Result<Arc<[u8]>, serde_json::Error> {
        if let Some(bytes) = self.deflated.get() {
            return Ok(Arc::clone(bytes));
        }
        let bytes = crate::store::stored_verdict::deflate(self.stored()?.get());
        Ok(Arc::clone(self.deflated.get_or_init(|| bytes)))
    }

    /// The memory the entry takes, about: its key and three times its JSON (the JSON, the
    /// stored text a submission makes from it, and room for the rest).
    fn size(&self, key: &[u8]) -> usize {
        key.len() + self.json.len() * 3
    }
}

#[derive(Default)]
struct Generations {
    current: HashMap<Vec<u8>, Arc<Checked>>,
    current_bytes: usize,
    previous: HashMap<Vec<u8>, Arc<Checked>>,
}

pub struct VerdictCache {
    budget: usize,
    generations: Mutex<Generations>,
}

impl VerdictCache {
    /// A cache that holds at most about `budget` bytes; 0 keeps nothing.
    pub fn new(budget: usize) -> VerdictCache {
        VerdictCache {
            budget,
            generations: Mutex::new(Generations::default()),
        }
    }

    /// The key of a design of a scenario: the scenario's hash and the design's JSON.
    pub fn key(scenario_hash: &str, design: &serde_json::Value) -> Vec<u8> {
        Self::key_of_text(scenario_hash, design.to_string().as_bytes())
    }

    /// The key of a design as the request's body wrote it: the same bytes parse into the
    /// same design, so a repeated request is answered before its JSON is parsed.
    pub fn key_of_text(scenario_hash: &str, design: &[u8]) -> Vec<u8> {
        let mut key = Vec::with_capacity(scenario_hash.len() + 1 + design.len());
        key.extend_from_slice(scenario_hash.as_bytes());
        key.push(b'\n');
        key.extend_from_slice(design);
        key
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        // Entries are inserted whole, so a poisoned lock holds nothing half-done.
        self.generations.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, key: &[u8]) -> Option<Arc<Checked>> {
        if self.budget == 0 {
            return None;
        }
        let mut g = self.lock();
        if let Some(found) = g.current.get(key) {
            return Some(Arc::clone(found));
        }
        let found = g.previous.remove(key)?;
        Self::put(&mut g, self.budget, key.to_vec(), Arc::clone(&found));
        Some(found)
    }

    pub fn insert(&self, key: Vec<u8>, checked: Arc<Checked>) {
        if self.budget == 0 || checked.size(&key) > self.budget / 2 {
            return;
        }
        Self::put(&mut self.lock(), self.budget, key, checked);
    }

    fn put(g: &mut Generations, budget: usize, key: Vec<u8>, checked: Arc<Checked>) {
        g.current_bytes += checked.size(&key);
        g.current.insert(key, checked);
        if g.current_bytes > budget / 2 {
            g.previous = std::mem::take(&mut g.current);
            g.current_bytes = 0;
        }
    }

    /// Verdicts held.
    pub fn len(&self) -> usize {
        let g = self.lock();
        g.current.len() + g.previous.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(id: &str) -> Arc<Checked> {
        let verdict = Verdict {
            scenario: id.into(),
            scenario_hash: "sha256:x".into(),
            passed: true,
            score: 1,
            max_score: 1,
            schedules_explored: 1,
            requirements: Vec::new(),
            coverage: Default::default(),
            advisories: Default::default(),
        };
        Arc::new(Checked::new(verdict).unwrap())
    }

    #[test]
    fn a_verdict_is_found_by_its_scenario_and_design() {
        let cache = VerdictCache::new(1 << 20);
        let design = serde_json::json!({"nodes": [], "edges": []});
        let key = VerdictCache::key("sha256:a", &design);
        assert!(cache.get(&key).is_none());
        cache.insert(key.clone(), checked("a"));
        assert_eq!(cache.get(&key).unwrap().outline.scenario, "a");
        assert!(
            cache.get(&VerdictCache::key("sha256:b", &design)).is_none(),
            "another scenario hash is another verdict"
        );
        assert!(cache
            .get(&VerdictCache::key(
                "sha256:a",
                &serde_json::json!({"nodes": [1], "edges": []})
            ))
            .is_none());
    }

    #[test]
    fn the_cache_stays_within_its_budget_and_keeps_what_is_used() {
        let one = checked("s");
        let size = one.size(b"key-000");
        let cache = VerdictCache::new(size * 10);
        cache.insert(b"key-000".to_vec(), Arc::clone(&one));
        for i in 1..100 {
            cache.insert(format!("key-{i:03}").into_bytes(), Arc::clone(&one));
            assert!(
                cache.get(b"key-000").is_some(),
                "a verdict in use stays, at step {i}"
            );
            assert!(cache.len() <= 11, "{} entries", cache.len());
        }
        assert!(
            cache.get(b"key-050").is_none(),
            "an old unused verdict is dropped"
        );
        let none = VerdictCache::new(0);
        none.insert(b"k".to_vec(), one);
        assert!(none.get(b"k").is_none() && none.is_empty());
    }
}
