// Two-level hierarchy: acc_top holds two saturating adder stages and an
// accumulator register.
module acc_top (
    input  logic       clk,
    input  logic       rst_n,
    input  logic       valid,
    input  logic [7:0] x,
    input  logic [7:0] y,
    output logic [7:0] acc,
    output logic       sat
);
  logic [7:0] xy, next;
  logic sat_a, sat_b;

  sat_add stage_a (.a(x),   .b(y),  .s(xy),   .sat(sat_a));
  sat_add stage_b (.a(acc), .b(xy), .s(next), .sat(sat_b));

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      acc <= 8'd0;
      sat <= 1'b0;
    end else if (valid) begin
      acc <= next;
      sat <= sat_a | sat_b;
    end
  end
endmodule
