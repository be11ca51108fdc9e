// Package regoload is the one loader and the one compiler configuration of
// toolgate's policies: serve (engine), `toolgate test` (policytest), check
// and explain (inspect, through engine) all read policy and data files,
// parse them and compile them here, so that a policy one of them refuses
// the others refuse too, with the same diagnostics.
//
// A load has three steps, each usable alone:
//
//   - [Walk] finds and reads the files below a directory of a file system
//     (the operating system's, or an fs.FS such as an embed.FS): *.rego
//     policies (with [WalkOptions.Tests], *_test.rego too), and data
//     documents data.json, data.yaml and data.yml; names beginning with "."
//     are skipped (a ConfigMap's "..2026_…" folders) while the symlinks
//     that point into them are followed; every file is read through fsx's
//     bounds (a regular file of at most 16 MiB). [ReadNamed] reads a file
//     named explicitly, whatever its name.
//   - [Parse] parses the files with one set of parser options and mounts
//     each data document at the data path of its directory. It takes plain
//     [File] values, wherever they came from: a bundle's files load through
//     it alike.
//   - [NewCompiler] is the one compiler configuration: the given OPA
//     capabilities, type checking with schema annotations, and the check
//     that no rule's path conflicts with a data document.
//
// Every problem is reported at once, as a *[diag.List].
package regoload
