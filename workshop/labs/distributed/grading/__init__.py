"""The distributed lab's exercises and how they are graded: the predictions, the answers and the survey."""
