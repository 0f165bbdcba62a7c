package core

// The bounds of a feedback's value and weight, for POST /v1/feedback and
// the feedback a hook's on_fail and on_success report alike.
const (
	FeedbackValueMin = -10
	FeedbackValueMax = 10
	// A weight is from 0 to FeedbackWeightMax.
	FeedbackWeightMax = 1
)
