// Command nika checks and runs nika workflows. It only wires: flags, files,
// terminal output and exit codes; everything else lives in the packages.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
