// 8-bit unsigned adder that saturates at 255.
module sat_add (
    input  logic [7:0] a,
    input  logic [7:0] b,
    output logic [7:0] s,
    output logic       sat
);
  logic [8:0] full;
  assign full = {1'b0, a} + {1'b0, b};
  always_comb begin
    if (full[8]) begin
      s = 8'hFF;
      sat = 1'b1;
    end else begin
      s = full[7:0];
      sat = 1'b0;
    end
  end
endmodule
