use std::collections::HashSet;

use cuda_types::CUresult;

#[test]
fn every_code_has_name_and_description() {
    assert_eq!(CUresult::ALL.len(), 106, "CUDA 13.5 defines 106 codes");
    let mut names = HashSet::new();
    for &code in CUresult::ALL {
        let name = code.name().unwrap_or_else(|| panic!("{} has no name", code.0));
        let name = name.to_str().unwrap();
        assert!(name == "CUDA_SUCCESS" || name.starts_with("CUDA_ERROR_"), "{name}");
        assert!(names.insert(name), "{name} twice");
        let text = code.description().unwrap_or_else(|| panic!("{name} has no description"));
        assert!(!text.to_bytes().is_empty(), "{name}");
    }
    assert!(CUresult::ALL.windows(2).all(|w| w[0] < w[1]), "ALL ascends without repeats");
}

#[test]
fn known_strings() {
    let v = CUresult::CUDA_ERROR_INVALID_VALUE;
    assert_eq!(v.0, 1);
    assert_eq!(v.name().unwrap(), c"CUDA_ERROR_INVALID_VALUE");
    assert_eq!(v.description().unwrap(), c"invalid argument");
    assert_eq!(CUresult::CUDA_SUCCESS.description().unwrap(), c"no error");
    assert_eq!(CUresult::CUDA_ERROR_STUB_LIBRARY.0, 34);
    assert_eq!(CUresult::CUDA_ERROR_UNKNOWN.0, 999);
    assert_eq!(format!("{:?}", CUresult::CUDA_ERROR_NOT_FOUND), "CUDA_ERROR_NOT_FOUND");
    assert_eq!(format!("{}", CUresult::CUDA_ERROR_NOT_FOUND), "CUDA_ERROR_NOT_FOUND (named symbol not found)");
}

#[test]
fn unknown_codes_have_no_strings() {
    for raw in [9, 33, 35, 203, 706, 998, 1000, 12345, u32::MAX] {
        let code = CUresult(raw);
        assert!(code.name().is_none() && code.description().is_none(), "{raw}");
        assert_eq!(format!("{code:?}"), format!("CUresult({raw})"));
    }
}

#[test]
fn matches_nvidia_driver_555() {
    let data = include_str!("data/driver-555-errors.tsv");
    let mut seen = 0;
    for line in data.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split('\t');
        let code: u32 = f.next().unwrap().parse().unwrap();
        let name = f.next().unwrap();
        let text = f.next().unwrap();
        let r = CUresult(code);
        assert_eq!(r.name().map(|c| c.to_str().unwrap()), Some(name), "{code}");
        assert_eq!(r.description().map(|c| c.to_str().unwrap()), Some(text), "{code}");
        seen += 1;
    }
    assert_eq!(seen, 97);
}

#[test]
fn result_conversions() {
    assert_eq!(CUresult::CUDA_SUCCESS.result(), Ok(()));
    assert_eq!(CUresult::CUDA_ERROR_OUT_OF_MEMORY.result(), Err(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    assert_eq!(CUresult::from(Err(CUresult::CUDA_ERROR_INVALID_HANDLE)), CUresult::CUDA_ERROR_INVALID_HANDLE);
    assert!(CUresult::default().is_success());
}
