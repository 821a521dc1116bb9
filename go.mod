module github.com/weft-hpc/weft

go 1.26
