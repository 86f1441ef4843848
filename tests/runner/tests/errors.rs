//! The runner reports every detail the core lists, under the name the
//! scenario files use (tests/scenarios/README.md, "Error details").

use fencing::{Error, ErrorCode};

#[test]
fn every_code_renders_every_field_of_the_core() {
    for code in ErrorCode::ALL {
        let rendered = fencing_scenarios::render_error(&Error::example(code));
        assert_eq!(rendered["code"], code.as_str());
        for field in code.fields() {
            let name = field.json_name();
            assert!(
                !rendered[name].is_null(),
                "{code}: {name} missing in {rendered}"
            );
        }
    }
}

#[test]
fn the_readme_names_every_field() {
    let readme = std::fs::read_to_string(fencing_scenarios::scenario_dir().join("README.md"))
        .expect("tests/scenarios/README.md");
    for code in ErrorCode::ALL {
        for field in code.fields() {
            let name = format!("`{}`", field.json_name());
            assert!(readme.contains(&name), "{code}: README lacks {name}");
        }
    }
}
