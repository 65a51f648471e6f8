// swift-tools-version:5.9
// The Swift binding of NNC over its C API (libnnc.so from the CMake build).
//
// Where libnnc and its headers are: NNC_BUILD_DIR (the CMake build folder,
// default <repo>/build/release) and the repository's include/ folder, found
// from this file's place in the tree. test.sh sets NNC_BUILD_DIR from its
// argument; `NNC_BUILD_DIR=/path/to/build swift test` works the same.
import Foundation
import PackageDescription

let packageDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
let repoDir = packageDir.deletingLastPathComponent().deletingLastPathComponent()
let env = ProcessInfo.processInfo.environment
let buildDir = env["NNC_BUILD_DIR"].map { URL(fileURLWithPath: $0).standardizedFileURL.path }
  ?? repoDir.appendingPathComponent("build/release").path
let includeDir = env["NNC_INCLUDE_DIR"] ?? repoDir.appendingPathComponent("include").path
let libDir = buildDir + "/lib"
let generatedDir = buildDir + "/generated"

let cFlags = ["-I", includeDir, "-I", generatedDir]
let swiftCFlags = ["-Xcc", "-I", "-Xcc", includeDir, "-Xcc", "-I", "-Xcc", generatedDir]
let linkFlags = ["-L", libDir, "-Xlinker", "-rpath", "-Xlinker", libDir]

let package = Package(
  name: "NNC",
  products: [
    .library(name: "NNC", targets: ["NNC"]),
    .executable(name: "nnc-overhead", targets: ["nnc-overhead"]),
  ],
  targets: [
    // The C API as a Clang module (module.modulemap links libnnc).
    .systemLibrary(name: "CNNC", path: "Sources/CNNC"),
    .target(
      name: "NNC", dependencies: ["CNNC"],
      swiftSettings: [.unsafeFlags(swiftCFlags)],
      linkerSettings: [.unsafeFlags(linkFlags)]),
    // The same one-element command timed from C, beside the Swift loop.
    .target(
      name: "NNCOverheadC", dependencies: [],
      cSettings: [.unsafeFlags(cFlags + ["-O2"])],
      linkerSettings: [.unsafeFlags(linkFlags), .linkedLibrary("nnc")]),
    .executableTarget(
      name: "nnc-overhead", dependencies: ["NNC", "NNCOverheadC"],
      swiftSettings: [.unsafeFlags(swiftCFlags)],
      linkerSettings: [.unsafeFlags(linkFlags)]),
    .testTarget(
      name: "NNCTests", dependencies: ["NNC", "CNNC"],
      swiftSettings: [.unsafeFlags(swiftCFlags)],
      linkerSettings: [.unsafeFlags(linkFlags)]),
  ]
)
