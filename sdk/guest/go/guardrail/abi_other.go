//go:build !wasip1

package guardrail

import (
	"fmt"
	"os"
)

// Outside wasip1 there is no host: log goes to standard error, and the
// check runs through Run with an Input from NewInput.
func logMessage(level int, msg string) {
	fmt.Fprintf(os.Stderr, "guardrail [%d]: %s\n", level, msg)
}
