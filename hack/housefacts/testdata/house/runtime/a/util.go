package a

const limit = 3

func helper() int {
	var s Server
	_ = s
	return limit
}
