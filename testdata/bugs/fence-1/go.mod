module fence1

go 1.22
