import DeskFuzzTargets
import Glibc

/// The target this process fuzzes, chosen once at start (DESKD_FUZZ_TARGET).
nonisolated(unsafe) private var target: FuzzTargets.Target?

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    let name = getenv("DESKD_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let chosen = FuzzTargets.all[name] else {
        let names = FuzzTargets.all.keys.sorted().joined(separator: ", ")
        let sentence = "deskd-fuzz: set DESKD_FUZZ_TARGET to one of: \(names) (scripts/fuzz does).\n"
        _ = sentence.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        exit(2)
    }
    target = chosen
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    target?(bytes)
    return 0
}
