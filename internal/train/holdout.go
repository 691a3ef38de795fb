package train

// HoldOut splits a round's samples, oldest first, into those to train on
// and those held out to measure the dictionary on: every fourth is held
// out, never one of the first, on which a dictionary that merely holds
// them would look better than on the content to come. Of those to train
// on it keeps the newest whose training, for a dictionary of size bytes,
// fits memory ([MinCost]). Five samples or more hold one out at least;
// the samples themselves are not copied.
func HoldOut(samples [][]byte, size int, memory int64) (input, held [][]byte) {
	for i, b := range samples {
		if i%4 == 3 {
			held = append(held, b)
		} else {
			input = append(input, b)
		}
	}
	var n int64
	for i := len(input) - 1; i >= 0; i-- {
		if MinCost(n+int64(len(input[i])), size) > memory {
			input = input[i+1:]
			break
		}
		n += int64(len(input[i]))
	}
	return input, held
}
