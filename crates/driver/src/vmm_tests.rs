//! The virtual memory API against the mock backend.

use std::sync::Arc;

use cuda_types::{CUdevice_attribute as DA, CUpointer_attribute as PA};

use crate::mock::{MockBackend, MOCK_VMM_GRANULARITY as G};
use crate::*;

fn setup() -> (Driver, Arc<MockBackend>) {
    let m = Arc::new(MockBackend::with_builtins(2));
    let d = Driver::new(m.clone(), Config::default());
    d.init(0).expect("init");
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("set current");
    (d, m)
}

fn prop(device: i32) -> VmmProp {
    VmmProp { alloc_type: 1, location_type: 1, device, ..VmmProp::default() }
}

fn rw(devices: &[i32]) -> Vec<(u32, i32, u32)> {
    devices.iter().map(|&d| (1, d, 3)).collect()
}

fn put(d: &Driver, at: u64, bytes: &[u8]) -> Result<()> {
    // SAFETY: a host slice, valid for the synchronous copy.
    unsafe { d.memcpy_htod(at, bytes.as_ptr() as usize, bytes.len(), 0, false, false) }
}

fn get(d: &Driver, at: u64, n: usize) -> Result<Vec<u8>> {
    let mut v = vec![0u8; n];
    // SAFETY: as above.
    unsafe { d.memcpy_dtoh(v.as_mut_ptr() as usize, at, n, 0, false, false) }?;
    Ok(v)
}

fn is_invalid<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::InvalidValue(_)))
}

#[test]
fn the_device_says_it_supports_the_api_and_gives_its_granularity() {
    let (d, _) = setup();
    assert_eq!(d.device_attribute(DA::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0), Ok(1));
    assert_eq!(d.mem_get_allocation_granularity(&prop(0), 0), Ok(G));
    assert_eq!(d.mem_get_allocation_granularity(&prop(1), 1), Ok(G));
    assert!(is_invalid(d.mem_get_allocation_granularity(&prop(0), 2)), "unknown option");
    assert!(is_invalid(d.mem_get_allocation_granularity(&VmmProp { alloc_type: 2, ..prop(0) }, 0)), "managed type");
    assert_eq!(d.mem_get_allocation_granularity(&prop(7), 0), Err(Error::InvalidDevice(7)));
    assert!(matches!(d.mem_get_allocation_granularity(&VmmProp { location_type: 2, ..prop(0) }, 0), Err(Error::NotSupported(_))));
    assert!(matches!(d.mem_create(G, &VmmProp { handle_types: 1, ..prop(0) }, 0), Err(Error::NotSupported(_))));
    // A backend without the API says so.
    let plain = Driver::new(Arc::new(MockBackend::new(1)), Config::default());
    plain.init(0).expect("init");
    let mut no = DeviceProps::host_cpu(0);
    no.virtual_memory_management = false;
    assert_eq!(no.attribute(DA::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), Some(0));
}

#[test]
fn reservations_check_their_arguments_and_cost_nothing() {
    let (d, m) = setup();
    let before = m.allocated_bytes();
    let big = d.mem_address_reserve(64 << 30, 0, 0, 0).expect("64 GiB");
    assert_eq!(big % G as u64, 0, "aligned to the granularity by default");
    assert_eq!(m.allocated_bytes(), before, "a reservation holds no memory");
    assert!(is_invalid(d.mem_address_reserve(G, 0, 0, 1)), "flags");
    assert!(is_invalid(d.mem_address_reserve(0, 0, 0, 0)), "size 0");
    assert!(is_invalid(d.mem_address_reserve(G + 100, 0, 0, 0)), "not whole pages");
    assert!(is_invalid(d.mem_address_reserve(G, 3 << 20, 0, 0)), "alignment not a power of two");
    assert!(is_invalid(d.mem_address_reserve(G, 0, 0x1234, 0)), "hint not page aligned");
    let aligned = d.mem_address_reserve(G, 64 << 20, 0, 0).expect("aligned");
    assert_eq!(aligned % (64 << 20), 0);
    assert!(is_invalid(d.mem_address_free(big, G)), "wrong size");
    assert!(is_invalid(d.mem_address_free(big + G as u64, 64 << 30)), "not the start");
    d.mem_address_free(big, 64 << 30).expect("free");
    assert!(is_invalid(d.mem_address_free(big, 64 << 30)), "freed twice");
    d.mem_address_free(aligned, G).expect("free");
}

#[test]
fn mapping_rules_follow_cuda() {
    let (d, _) = setup();
    let r = d.mem_address_reserve(8 * G, 0, 0, 0).expect("reserve");
    let r2 = d.mem_address_reserve(8 * G, 0, 0, 0).expect("reserve");
    assert!(is_invalid(d.mem_create(G + 4096, &prop(0), 0)), "size not a multiple of the granularity");
    assert!(is_invalid(d.mem_create(0, &prop(0), 0)), "size 0");
    assert!(is_invalid(d.mem_create(G, &prop(0), 1)), "flags");
    let h = d.mem_create(2 * G, &prop(0), 0).expect("create");
    assert!(is_invalid(d.mem_map(r + 4096, G, 0, h, 0)), "address not aligned");
    assert!(is_invalid(d.mem_map(r, G + 4096, 0, h, 0)), "size not aligned");
    assert!(is_invalid(d.mem_map(r, G, 4096, h, 0)), "offset not aligned");
    assert!(is_invalid(d.mem_map(r, 2 * G, G, h, 0)), "past the allocation's end");
    assert!(is_invalid(d.mem_map(r, G, 0, h, 1)), "flags");
    assert!(is_invalid(d.mem_map(r, G, 0, 0xdead_0000, 0)), "not a handle");
    assert!(is_invalid(d.mem_map(r + 7 * G as u64, 2 * G, 0, h, 0)), "runs out of the reservation");
    let outside = r2 + 8 * G as u64 + 16 * G as u64;
    assert!(is_invalid(d.mem_map(outside, G, 0, h, 0)), "not reserved");
    d.mem_map(r, 2 * G, 0, h, 0).expect("map");
    assert!(is_invalid(d.mem_map(r + G as u64, G, 0, h, 0)), "over a mapped range");
    d.mem_map(r + 2 * G as u64, G, G, h, 0).expect("the second half again, with an offset");
    assert!(is_invalid(d.mem_address_free(r, 8 * G)), "a reservation with mappings cannot be freed");
    assert!(is_invalid(d.mem_unmap(r, G)), "part of a mapping");
    assert!(is_invalid(d.mem_unmap(r + G as u64, 2 * G)), "not starting at a mapping");
    assert!(is_invalid(d.mem_unmap(r, 4 * G)), "past the mappings, into unmapped space");
    d.mem_unmap(r, 3 * G).expect("two mappings side by side in one call");
    d.mem_release(h).expect("release");
    assert!(is_invalid(d.mem_release(h)), "released twice");
    assert!(is_invalid(d.mem_map(r, G, 0, h, 0)), "a released, unmapped handle is gone");
    d.mem_address_free(r, 8 * G).expect("free");
    d.mem_address_free(r2, 8 * G).expect("free");
}

#[test]
fn mapped_memory_needs_access_and_then_behaves_as_device_memory() {
    let (d, _) = setup();
    let r = d.mem_address_reserve(4 * G, 0, 0, 0).expect("reserve");
    let h = d.mem_create(G, &prop(0), 0).expect("create");
    d.mem_map(r, G, 0, h, 0).expect("map");
    assert!(is_invalid(put(&d, r, &[1, 2, 3, 4])), "no access yet");
    assert!(is_invalid(get(&d, r, 4)), "no access yet");
    assert!(is_invalid(d.mem_set_access(r, G, &[])), "no descriptors");
    assert!(is_invalid(d.mem_set_access(r, G, &[(1, 0, 2)])), "unknown flags");
    assert_eq!(d.mem_set_access(r, G, &[(1, 9, 3)]), Err(Error::InvalidDevice(9)));
    assert!(is_invalid(d.mem_set_access(r, 2 * G, &rw(&[0]))), "not fully mapped");
    d.mem_set_access(r, G, &[(1, 0, 1)]).expect("read only");
    assert_eq!(d.mem_get_access(1, 0, r + 100), Ok(1));
    assert_eq!(d.mem_get_access(1, 1, r), Ok(0), "device 1 was not granted access");
    assert!(is_invalid(put(&d, r, &[1])), "read-only memory is not written");
    assert_eq!(get(&d, r, 4), Ok(vec![0; 4]), "but read");
    d.mem_set_access(r, G, &rw(&[0, 1])).expect("read-write");
    assert_eq!(d.mem_get_access(1, 1, r), Ok(3));
    put(&d, r + 8, &[9, 8, 7]).expect("write");
    assert_eq!(get(&d, r + 8, 3), Ok(vec![9, 8, 7]));
    d.memset(r + 16, MemsetValue::U32(0xa5a5_0101), 4, 0, false, false).expect("memset");
    assert_eq!(get(&d, r + 16, 4), Ok(vec![1, 1, 0xa5, 0xa5]));
    assert!(is_invalid(put(&d, r + G as u64 - 2, &[1, 2, 3, 4])), "runs past the mapping into reserved space");
    // SAFETY: both sides are driver memory.
    assert!(is_invalid(unsafe { d.memcpy(r + G as u64, r, 8, 0, false, false) }), "unified copy into unmapped reserved space");
    // Pointer attributes see device memory, the mapping being the range.
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, r + 5), Ok(PointerAttribute::U32(2)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, r + 5), Ok(PointerAttribute::U64(r)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_RANGE_SIZE, r + 5), Ok(PointerAttribute::U64(G as u64)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, r + 5), Ok(PointerAttribute::U64(r)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, r + 5), Ok(PointerAttribute::U32(3)));
    assert_eq!(d.mem_get_address_range(r + 5), Ok((r, G)));
    assert!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, r + G as u64).is_err(), "reserved, unmapped");
    assert!(is_invalid(d.mem_free(r)), "mapped memory is not cuMemFree's");
    d.mem_unmap(r, G).expect("unmap");
    assert!(is_invalid(get(&d, r, 4)), "unmapped again");
    d.mem_release(h).expect("release");
    d.mem_address_free(r, 4 * G).expect("free");
}

#[test]
fn one_allocation_at_two_addresses_and_copies_across_adjacent_mappings() {
    let (d, m) = setup();
    let r = d.mem_address_reserve(8 * G, 0, 0, 0).expect("reserve");
    let h = d.mem_create(2 * G, &prop(0), 0).expect("create");
    let h2 = d.mem_create(G, &prop(0), 0).expect("create");
    let (a, b, c) = (r, r + 4 * G as u64, r + 6 * G as u64);
    d.mem_map(a, 2 * G, 0, h, 0).expect("map a");
    d.mem_map(b, 2 * G, 0, h, 0).expect("map the same memory at b");
    d.mem_map(c, G, 0, h2, 0).expect("another allocation right after b");
    d.mem_set_access(a, 2 * G, &rw(&[0])).expect("access");
    d.mem_set_access(b, 3 * G, &rw(&[0])).expect("access to two mappings at once");
    let data: Vec<u8> = (0..64u32).map(|i| i as u8 * 3).collect();
    put(&d, a + G as u64 + 100, &data).expect("write through a");
    assert_eq!(get(&d, b + G as u64 + 100, 64), Ok(data.clone()), "b shows a's bytes");
    // A buffer straddling the boundary between b's mapping and c's.
    let edge = c - 32;
    put(&d, edge, &data).expect("write across two mappings");
    assert_eq!(get(&d, edge, 64), Ok(data.clone()));
    assert_eq!(get(&d, a + 2 * G as u64 - 32, 32), Ok(data[..32].to_vec()), "the first half landed in h (seen through a)");
    d.memcpy_dtod(edge - 4096, edge, 64, 0, false, false).expect("device to device within the run");
    assert_eq!(get(&d, edge - 4096, 64), Ok(data.clone()));
    // Releasing the handles keeps mapped memory alive; unmapping frees it.
    let live = m.allocated_bytes();
    d.mem_release(h).expect("release");
    d.mem_release(h2).expect("release");
    assert_eq!(m.allocated_bytes(), live, "still mapped");
    assert_eq!(get(&d, b + G as u64 + 100, 64), Ok(data.clone()));
    let again = d.mem_retain_allocation_handle(b + 12345).expect("retain");
    assert_eq!(again, h, "the same handle value");
    assert_eq!(d.mem_allocation_properties(again).map(|p| p.device), Ok(0));
    d.mem_unmap(a, 2 * G).expect("unmap a");
    d.mem_unmap(b, 3 * G).expect("unmap b and c");
    assert_eq!(m.allocated_bytes(), live - G as u64, "h2 freed; h held by the retained handle");
    d.mem_release(again).expect("release the retained handle");
    assert_eq!(m.allocated_bytes(), live - 3 * G as u64, "everything freed");
    d.mem_address_free(r, 8 * G).expect("free");
}
