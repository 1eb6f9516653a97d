//! Every capture in fixtures/ is classified as its manifest says.

use promptgate::detect::detect;
use promptgate::profile::Profiles;
use promptgate::screen::Screen;
use std::path::Path;

#[test]
fn every_fixture_is_classified_as_its_manifest_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let manifest = std::fs::read_to_string(root.join("manifest.tsv")).unwrap();
    let profiles = Profiles::builtin();
    let mut failures = Vec::new();
    let mut n = 0;
    for line in manifest.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, agent, want) = (cols[0], cols[1], cols[5]);
        let screen = Screen::load(&root.join(format!("{file}.txt")), None).unwrap();
        let v = detect(profiles.get(agent).unwrap(), &screen);
        n += 1;
        if v.state.to_string() != want {
            failures.push(format!(
                "{file}: want {want}, got {} ({})",
                v.state,
                v.reason()
            ));
        }
    }
    assert!(n >= 100, "only {n} fixtures");
    assert!(
        failures.is_empty(),
        "{} of {n} misclassified:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
