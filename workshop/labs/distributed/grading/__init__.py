"""The distributed lab's exercises (declared in exercises.py) and how they are graded."""
